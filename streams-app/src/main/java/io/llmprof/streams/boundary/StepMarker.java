package io.llmprof.streams.boundary;

import io.llmprof.events.PassRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A step marker's meaning, parsed from its annotation text (ANALYSIS.md section 2). The forms, the engine
 * version that writes each and what llmprof reads from it are in docs/analysis.md "Step markers" ({@link Form}).
 * Text that is none of them is not a marker; parsing never throws. Text that looks like a step (see {@link
 * #unknownForm}) but matches no form is reported, never guessed.
 *
 * @param family which framework wrote it; also its priority when markers nest (higher wins)
 * @param form the exact text form
 * @param text the annotation text as written
 * @param phase {@link PassRecord#PREFILL}, {@link PassRecord#DECODE}, {@link PassRecord#MIXED}, or null when the
 *     text does not say
 * @param batchSize requests in the step, null when the text does not say
 * @param tokens tokens of the step, null when the text does not say
 * @param note why a field is unknown although the text is a marker (an SGLang mode llmprof does not map, a vLLM
 *     form that does not tell decode from chunked prefill), or null
 */
public record StepMarker(
        Family family, Form form, String text, String phase, Integer batchSize, Long tokens, String note) {

    /**
     * Marker families, worst first: a marker that encloses one of a better family is only a wrapper. The ordinal is
     * kept in segmenter state: new families go last.
     */
    public enum Family {
        PROFILER,
        VLLM,
        SGLANG,
        TRTLLM;

        public boolean betterThan(Family other) {
            return compareTo(other) > 0;
        }
    }

    /** The text forms, one per engine release line that wrote it (docs/analysis.md has the table). */
    public enum Form {
        /** torch {@code ProfilerStep#N}. */
        PROFILER_STEP(Family.PROFILER),
        /** vLLM V1 worker, default: {@code execute_context_N(T)_generation_M(T)}. */
        VLLM_CONTEXT_GENERATION(Family.VLLM),
        /**
         * vLLM V1 worker with {@code profiler_config.detailed_trace_annotation}, and the ROCm builds before it: {@code
         * execute_<tokens>_context_N(sq..sk..sqsq..sqsk..)_generation_M(..)}.
         */
        VLLM_DETAILED(Family.VLLM),
        /** vLLM V1 worker of v0.10 to v0.13: {@code execute_new_N_cached_M}. */
        VLLM_NEW_CACHED(Family.VLLM),
        /** SGLang model runner: {@code step[MODE bs=.. toks=..]}, with optional roofline keys. */
        SGLANG_STEP(Family.SGLANG),
        /** TensorRT-LLM PyExecutor: {@code [Executor] _forward_step I: C ctx reqs, G gen reqs}. */
        TRTLLM_FORWARD_STEP(Family.TRTLLM);

        private final Family family;

        Form(Family family) {
            this.family = family;
        }

        public Family family() {
            return family;
        }
    }

    private static final Pattern PROFILER = Pattern.compile("ProfilerStep#\\d{1,18}");
    private static final Pattern SGLANG = Pattern.compile("step\\[([A-Za-z][A-Za-z_]*)((?: [^ \\]]+)*)\\]");
    private static final Pattern SGLANG_ARG = Pattern.compile("([a-z][a-z0-9_]*)=(\\d{1,18})");
    private static final Pattern SGLANG_WORD = Pattern.compile("[A-Za-z][A-Za-z0-9_-]*");
    private static final Pattern VLLM_DETAILED = Pattern.compile(
            "execute_(\\d{1,18})_context_(\\d{1,9})(?:\\([^()]*\\))?_generation_(\\d{1,9})(?:\\([^()]*\\))?");
    private static final Pattern VLLM_CONTEXT_GENERATION =
            Pattern.compile("execute_context_(\\d{1,9})\\((\\d{1,18})\\)_generation_(\\d{1,9})\\((\\d{1,18})\\)");
    private static final Pattern VLLM_NEW_CACHED = Pattern.compile("execute_new_(\\d{1,9})_cached_(\\d{1,9})");
    private static final Pattern TRTLLM = Pattern.compile("(?:\\[Executor\\]\\s*)?_forward_step(?:\\s+(\\d{1,18}))?"
            + "(?:\\s*:\\s*(\\d{1,9})\\s+ctx\\s+reqs?\\s*,\\s*(\\d{1,9})\\s+gen\\s+reqs?)?");
    private static final Pattern DIGITS = Pattern.compile("\\d+");
    private static final int MAX_TEXT = 4096;
    private static final int MAX_FORM = 96;

    /** The marker {@code text} describes, or null when it is not a step marker (null text included). */
    public static StepMarker parse(String text) {
        if (text == null || text.isEmpty() || text.length() > MAX_TEXT) {
            return null;
        }
        char c = text.charAt(0);
        if (c == 'P' && PROFILER.matcher(text).matches()) {
            return new StepMarker(Family.PROFILER, Form.PROFILER_STEP, text, null, null, null, null);
        }
        if (c == 's') {
            return sglang(text);
        }
        if (c == 'e') {
            return vllm(text);
        }
        if ((c == '[' || c == '_') && text.contains("_forward_step")) {
            return trtllm(text);
        }
        return null;
    }

    /** Cheap pre-check for hot paths: whether {@code text} could be a marker at all (also true for unknown forms). */
    public static boolean mayBeMarker(String text) {
        return text != null
                && (text.startsWith("ProfilerStep")
                        || text.startsWith("step[")
                        || text.startsWith("execute_")
                        || text.contains("forward_step"));
    }

    /**
     * The shape of {@code text} (digit runs as {@code N}, at most {@value #MAX_FORM} characters) when it looks like
     * a step marker ({@code ProfilerStep..}, {@code step[..}, {@code execute_..}, or containing {@code forward_step})
     * but matches no known form; null otherwise. One notice per shape: the step numbers and counts change with
     * every step, the form does not.
     */
    public static String unknownForm(String text) {
        if (!mayBeMarker(text) || parse(text) != null) {
            return null;
        }
        String shape = DIGITS.matcher(text).replaceAll("N");
        return shape.length() > MAX_FORM ? shape.substring(0, MAX_FORM) + "…" : shape;
    }

    private static StepMarker sglang(String text) {
        Matcher m = SGLANG.matcher(text);
        if (!m.matches()) {
            return null;
        }
        String mode = m.group(1).toUpperCase(Locale.ROOT);
        Integer bs = null;
        Long toks = null;
        Long contextTokens = null;
        Long generationTokens = null;
        List<String> ignored = new ArrayList<>();
        String args = m.group(2);
        if (!args.isEmpty()) {
            for (String part : args.substring(1).split(" ", -1)) {
                Matcher a = SGLANG_ARG.matcher(part);
                if (a.matches()) {
                    long v = Long.parseLong(a.group(2)); // at most 18 digits: always fits
                    switch (a.group(1)) {
                        case "bs" -> bs = v <= Integer.MAX_VALUE ? Integer.valueOf((int) v) : null;
                        case "toks" -> toks = v;
                        case "c_sq" -> contextTokens = v;
                        case "g_sq" -> generationTokens = v;
                        default -> {
                            // roofline sums (c_sk, g_sqsq, ...) and request counts carry nothing a pass reports
                        }
                    }
                } else if (SGLANG_WORD.matcher(part).matches()) {
                    ignored.add(part);
                } else {
                    return null; // "bs=", "bs=-1", an empty token (two spaces): not a form SGLang writes
                }
            }
        }
        if (toks == null && (contextTokens != null || generationTokens != null)) {
            toks = (contextTokens == null ? 0 : contextTokens) + (generationTokens == null ? 0 : generationTokens);
        }
        String phase =
                switch (mode) {
                    case "DECODE" -> PassRecord.DECODE;
                    case "EXTEND", "PREFILL", "SPLIT_PREFILL" -> PassRecord.PREFILL;
                    case "MIXED" -> PassRecord.MIXED;
                    default -> null;
                };
        List<String> notes = new ArrayList<>();
        if (phase == null) {
            notes.add("SGLang forward mode " + m.group(1) + " has no prefill/decode/mixed phase");
        }
        if (!ignored.isEmpty()) {
            notes.add("words " + ignored + " of the step marker carry nothing llmprof reads");
        }
        return new StepMarker(
                Family.SGLANG,
                Form.SGLANG_STEP,
                text,
                phase,
                bs,
                toks,
                notes.isEmpty() ? null : String.join("; ", notes));
    }

    private static StepMarker vllm(String text) {
        Matcher v1 = VLLM_CONTEXT_GENERATION.matcher(text);
        if (v1.matches()) {
            int context = Integer.parseInt(v1.group(1));
            int generation = Integer.parseInt(v1.group(3));
            long tokens = Long.parseLong(v1.group(2)) + Long.parseLong(v1.group(4));
            return vllmCounts(Form.VLLM_CONTEXT_GENERATION, text, context, generation, tokens);
        }
        Matcher d = VLLM_DETAILED.matcher(text);
        if (d.matches()) {
            long tokens = Long.parseLong(d.group(1));
            return vllmCounts(
                    Form.VLLM_DETAILED, text, Integer.parseInt(d.group(2)), Integer.parseInt(d.group(3)), tokens);
        }
        Matcher nc = VLLM_NEW_CACHED.matcher(text);
        if (nc.matches()) {
            int fresh = Integer.parseInt(nc.group(1));
            int cached = Integer.parseInt(nc.group(2));
            // New requests run their (first) prefill; cached ones run decode or the next chunk of a prefill, which
            // this form does not tell apart.
            String phase = fresh > 0 && cached == 0 ? PassRecord.PREFILL : null;
            String note = phase != null
                    ? null
                    : fresh + cached == 0
                            ? "vLLM step with no new and no cached requests"
                            : "vLLM execute_new_N_cached_M does not tell decode from chunked prefill for cached"
                                    + " requests: phase unknown";
            return new StepMarker(Family.VLLM, Form.VLLM_NEW_CACHED, text, phase, fresh + cached, null, note);
        }
        return null;
    }

    private static StepMarker vllmCounts(Form form, String text, int context, int generation, long tokens) {
        String phase = context > 0 && generation > 0
                ? PassRecord.MIXED
                : context > 0 ? PassRecord.PREFILL : generation > 0 ? PassRecord.DECODE : null;
        String note = phase == null ? "vLLM step with no context and no generation requests" : null;
        return new StepMarker(Family.VLLM, form, text, phase, context + generation, tokens, note);
    }

    private static StepMarker trtllm(String text) {
        Matcher m = TRTLLM.matcher(text.trim());
        if (!m.matches()) {
            return null;
        }
        if (m.group(2) == null) {
            return new StepMarker(
                    Family.TRTLLM,
                    Form.TRTLLM_FORWARD_STEP,
                    text,
                    null,
                    null,
                    null,
                    "TensorRT-LLM _forward_step without request counts: phase unknown");
        }
        int context = Integer.parseInt(m.group(2));
        int generation = Integer.parseInt(m.group(3));
        String phase = context > 0 && generation > 0
                ? PassRecord.MIXED
                : context > 0 ? PassRecord.PREFILL : generation > 0 ? PassRecord.DECODE : null;
        String note = phase == null ? "TensorRT-LLM step with no context and no generation requests" : null;
        return new StepMarker(Family.TRTLLM, Form.TRTLLM_FORWARD_STEP, text, phase, context + generation, null, note);
    }
}
