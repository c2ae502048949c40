package io.llmprof.agent.synth;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Which framework's step markers synth writes, and the phase of each pass. The phase pattern repeats:
 * {@code prefill:1,decode:7} makes passes 0, 8, 16, ... prefill steps and the others decode steps (the kernel
 * sequence is the same; only the marker says so).
 *
 * @param style marker text: torch {@code ProfilerStep#N} (host and GPU annotations), SGLang {@code
 *     step[DECODE bs=..]} / {@code step[EXTEND bs=.. toks=..]}, vLLM's detailed {@code
 *     execute_<tokens>_context_<n>()_generation_<m>()} (host annotations only, as those frameworks write them),
 *     vLLM V1's default {@code execute_context_<n>(<tokens>)_generation_<m>(<tokens>)} (host and GPU annotations,
 *     as the torch profiler records a CUDA run) or TensorRT-LLM's {@code [Executor] _forward_step <i>: <c> ctx
 *     reqs, <g> gen reqs} (host)
 * @param phases runs of passes per phase, repeated
 */
public record StepStyle(Style style, List<Run> phases) {
    /** The marker text family. */
    public enum Style {
        PROFILER,
        SGLANG,
        /** vLLM's detailed form (and AMD's ROCm builds). */
        VLLM,
        /** vLLM V1's default form. */
        VLLM_V1,
        TRTLLM
    }

    /** {@code passes} consecutive passes of {@code phase} ("prefill" or "decode"). */
    public record Run(String phase, int passes) {
        public Run {
            if (!"prefill".equals(phase) && !"decode".equals(phase)) {
                throw new IllegalArgumentException("phase must be prefill or decode, not " + phase);
            }
            if (passes < 1) {
                throw new IllegalArgumentException("a phase run needs at least 1 pass, not " + passes);
            }
        }
    }

    /** ProfilerStep#N markers, every pass a decode step: what synth always wrote. */
    public static final StepStyle DEFAULT = new StepStyle(Style.PROFILER, List.of(new Run("decode", 1)));

    /** Prompt tokens per request of a prefill step. */
    static final int PREFILL_TOKENS_PER_REQUEST = 128;

    public StepStyle {
        Objects.requireNonNull(style, "style");
        phases = List.copyOf(phases);
        if (phases.isEmpty()) {
            throw new IllegalArgumentException("the phase pattern is empty");
        }
    }

    /**
     * {@code profiler|sglang|vllm|vllm_v1|trtllm} and {@code phase:count[,phase:count...]}, e.g. {@code
     * prefill:1,decode:7}.
     */
    public static StepStyle parse(String style, String pattern) {
        Style s;
        try {
            s = Style.valueOf(style.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "marker style must be profiler, sglang, vllm, vllm_v1 or trtllm, not " + style, e);
        }
        List<Run> runs = new ArrayList<>();
        for (String part : pattern.split(",")) {
            String[] kv = part.trim().split(":");
            if (kv.length != 2) {
                throw new IllegalArgumentException("phase run must look like decode:7, not " + part);
            }
            try {
                runs.add(new Run(kv[0].trim(), Integer.parseInt(kv[1].trim())));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("phase run must look like decode:7, not " + part, e);
            }
        }
        return new StepStyle(s, runs);
    }

    public String phaseOf(int pass) {
        int period = phases.stream().mapToInt(Run::passes).sum();
        int k = pass % period;
        for (Run r : phases) {
            if (k < r.passes()) {
                return r.phase();
            }
            k -= r.passes();
        }
        throw new IllegalStateException("unreachable");
    }

    /** The host marker's text for pass {@code pass} of a batch of {@code batchSize} requests. */
    public String hostText(int pass, int batchSize) {
        boolean prefill = "prefill".equals(phaseOf(pass));
        long prompt = (long) batchSize * PREFILL_TOKENS_PER_REQUEST;
        return switch (style) {
            case PROFILER -> "ProfilerStep#" + pass;
            case SGLANG -> prefill
                    ? "step[EXTEND bs=" + batchSize + " toks=" + prompt + "]"
                    : "step[DECODE bs=" + batchSize + "]";
            case VLLM -> prefill
                    ? "execute_" + prompt + "_context_" + batchSize + "(sq" + prompt + ")_generation_0()"
                    : "execute_" + batchSize + "_context_0()_generation_" + batchSize + "(sq" + batchSize + ")";
            case VLLM_V1 -> prefill
                    ? "execute_context_" + batchSize + "(" + prompt + ")_generation_0(0)"
                    : "execute_context_0(0)_generation_" + batchSize + "(" + batchSize + ")";
            case TRTLLM -> "[Executor] _forward_step " + pass + ": " + (prefill ? batchSize : 0) + " ctx reqs, "
                    + (prefill ? 0 : batchSize) + " gen reqs";
        };
    }

    /** The tokens the step's marker text says, null when it says none (what a pass should report). */
    public Long tokens(int pass, int batchSize) {
        boolean prefill = "prefill".equals(phaseOf(pass));
        long prompt = (long) batchSize * PREFILL_TOKENS_PER_REQUEST;
        return switch (style) {
            case PROFILER, TRTLLM -> null;
            case SGLANG -> prefill ? Long.valueOf(prompt) : null;
            case VLLM, VLLM_V1 -> prefill ? prompt : batchSize;
        };
    }

    /**
     * Whether a GPU-side copy of the step is written: torch's profiler records one for its step and, on CUDA, for
     * every annotated range that ran GPU work (vLLM V1 traces carry both); the other styles stay host-only, as the
     * ROCm traces of those frameworks are.
     */
    public boolean gpuAnnotation() {
        return style == Style.PROFILER || style == Style.VLLM_V1;
    }
}
