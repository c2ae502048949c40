package io.llmprof.streams.boundary;

import io.llmprof.events.PassRecord;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A step marker's meaning, parsed from its annotation text (ANALYSIS.md section 2): torch
 * {@code ProfilerStep#N}, SGLang {@code step[DECODE bs=32]} / {@code step[EXTEND bs=15 toks=15360]}, vLLM
 * {@code execute_<tokens>_context_<n>(...)_generation_<m>(...)}. Text that is none of these is not a marker;
 * parsing never throws.
 *
 * @param family which framework wrote it; also its priority when markers nest (higher wins)
 * @param text the annotation text as written
 * @param phase {@link PassRecord#PREFILL}, {@link PassRecord#DECODE}, {@link PassRecord#MIXED}, or null when the
 *     text does not say
 * @param batchSize requests in the step, null when the text does not say
 * @param tokens tokens of the step, null when the text does not say
 * @param note why a field is unknown although the text is a marker (an SGLang mode llmprof does not map), or
 *     null
 */
public record StepMarker(Family family, String text, String phase, Integer batchSize, Long tokens, String note) {

    /** Marker families, worst first: a marker that encloses one of a better family is only a wrapper. */
    public enum Family {
        PROFILER,
        VLLM,
        SGLANG;

        public boolean betterThan(Family other) {
            return compareTo(other) > 0;
        }
    }

    private static final Pattern PROFILER = Pattern.compile("ProfilerStep#\\d{1,18}");
    private static final Pattern SGLANG = Pattern.compile("step\\[([A-Z][A-Z_]*)((?: [a-z_]+=\\d{1,18})*)\\]");
    private static final Pattern SGLANG_ARG = Pattern.compile(" ([a-z_]+)=(\\d{1,18})");
    private static final Pattern VLLM = Pattern.compile(
            "execute_(\\d{1,18})_context_(\\d{1,9})(?:\\([^()]*\\))?_generation_(\\d{1,9})(?:\\([^()]*\\))?");

    /** The marker {@code text} describes, or null when it is not a step marker (null text included). */
    public static StepMarker parse(String text) {
        if (text == null || text.isEmpty() || text.length() > 4096) {
            return null;
        }
        char c = text.charAt(0);
        if (c == 'P' && PROFILER.matcher(text).matches()) {
            return new StepMarker(Family.PROFILER, text, null, null, null, null);
        }
        if (c == 's') {
            return sglang(text);
        }
        if (c == 'e') {
            return vllm(text);
        }
        return null;
    }

    /** Cheap pre-check for hot paths: whether {@code text} could be a marker at all. */
    public static boolean mayBeMarker(String text) {
        return text != null
                && (text.startsWith("ProfilerStep#") || text.startsWith("step[") || text.startsWith("execute_"));
    }

    private static StepMarker sglang(String text) {
        Matcher m = SGLANG.matcher(text);
        if (!m.matches()) {
            return null;
        }
        String mode = m.group(1);
        Integer bs = null;
        Long toks = null;
        Matcher a = SGLANG_ARG.matcher(m.group(2));
        while (a.find()) {
            long v = Long.parseLong(a.group(2)); // at most 18 digits: always fits
            switch (a.group(1)) {
                case "bs" -> bs = v <= Integer.MAX_VALUE ? Integer.valueOf((int) v) : null;
                case "toks" -> toks = v;
                default -> {
                    // other keys (SGLang adds some over versions) carry nothing llmprof reports
                }
            }
        }
        String phase =
                switch (mode) {
                    case "DECODE" -> PassRecord.DECODE;
                    case "EXTEND", "PREFILL" -> PassRecord.PREFILL;
                    case "MIXED" -> PassRecord.MIXED;
                    default -> null;
                };
        String note = phase == null ? "SGLang forward mode " + mode + " has no prefill/decode/mixed phase" : null;
        return new StepMarker(Family.SGLANG, text, phase, bs, toks, note);
    }

    private static StepMarker vllm(String text) {
        Matcher m = VLLM.matcher(text);
        if (!m.matches()) {
            return null;
        }
        long tokens = Long.parseLong(m.group(1));
        int context = Integer.parseInt(m.group(2));
        int generation = Integer.parseInt(m.group(3));
        String phase = context > 0 && generation > 0
                ? PassRecord.MIXED
                : context > 0 ? PassRecord.PREFILL : generation > 0 ? PassRecord.DECODE : null;
        String note = phase == null ? "vLLM step with no context and no generation requests" : null;
        return new StepMarker(Family.VLLM, text, phase, context + generation, tokens, note);
    }
}
