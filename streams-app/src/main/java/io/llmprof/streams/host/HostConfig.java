package io.llmprof.streams.host;

import io.llmprof.events.host.HostThresholdSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Configuration of the host-overhead engine.
 *
 * @param thresholds metric thresholds with per-phase overrides
 * @param prepPatterns host-prep annotation names: a substring, or a Java regex ({@code find()}) when it starts
 *     with {@code re:}
 * @param commPattern case-insensitive regex ({@code find()}) on kernel names marking communication kernels (M5,
 *     collectives, all-reduce grouping)
 * @param windowSource {@code auto} (nvtx, then marker, pass, allreduce) or one of those sources alone
 * @param rollingSteps steps per phase in a rolling verdict; 0 = cumulative over the whole run
 * @param maxBufferedIntervals bound on buffered GPU + host intervals per rank; above it the oldest windows
 *     close early, marked incomplete
 * @param allreduceAfterKernels GPU events after which, with no window seen, all-reduce grouping starts (auto)
 *     and a rank without host events is treated as host-less
 * @param numLayers layers of the model, for the HOST_SYNC finding; null when unknown
 */
public record HostConfig(
        HostThresholdSet thresholds,
        List<String> prepPatterns,
        String commPattern,
        String windowSource,
        int rollingSteps,
        int maxBufferedIntervals,
        int allreduceAfterKernels,
        Integer numLayers) {
    public static final String AUTO = "auto";
    public static final String NVTX = "nvtx";
    public static final String MARKER = "marker";
    public static final String PASS = "pass";
    public static final String ALLREDUCE = "allreduce";
    public static final Set<String> SOURCES = Set.of(AUTO, NVTX, MARKER, PASS, ALLREDUCE);

    public static final List<String> DEFAULT_PREP = List.of("_prepare_tp_inputs", "_prepare_inputs", "prepare_inputs");
    /**
     * Communication kernels by name (M5, the caveat, collectives, all-reduce grouping): every collective,
     * point-to-point, custom / symmetric-memory / one-shot / two-shot all-reduce and expert-parallel dispatch/combine
     * (DeepEP, TensorRT-LLM MoE all-to-all, pplx, MORI). The names the communication categories of profiles.json
     * match are matched here too (HostCommPatternTest).
     */
    public static final String DEFAULT_COMM = "nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|alltoall"
            + "|cross_device_reduce|two_shot|one_shot|multimem|allreduce_fusion|quickreduce|send_?recv|symm_mem"
            + "|nvshmem|deep_ep::|dpsk::ep::|\\bep::(internode|intranode)|\\binter(node|node_ll)::(dispatch|combine)"
            + "|\\bintranode::(dispatch|combine)|moeA2A|moe_?a2a|moe_?alltoall|moe_?comm|pplx::|mori::\\w*(dispatch"
            + "|combine)|\\bep_?(dispatch|combine)";

    public HostConfig {
        Objects.requireNonNull(thresholds, "thresholds");
        prepPatterns = prepPatterns == null ? List.of() : List.copyOf(prepPatterns);
        Objects.requireNonNull(commPattern, "commPattern");
        windowSource = windowSource == null ? AUTO : windowSource.toLowerCase(Locale.ROOT);
        if (!SOURCES.contains(windowSource)) {
            throw new IllegalArgumentException(
                    "window source '" + windowSource + "' is not one of auto, nvtx, marker, pass, allreduce");
        }
        if (rollingSteps < 0) {
            throw new IllegalArgumentException("rollingSteps " + rollingSteps + " < 0");
        }
        if (maxBufferedIntervals < 16) {
            throw new IllegalArgumentException("maxBufferedIntervals " + maxBufferedIntervals + " < 16");
        }
        if (allreduceAfterKernels < 1) {
            throw new IllegalArgumentException("allreduceAfterKernels " + allreduceAfterKernels + " < 1");
        }
        if (numLayers != null && numLayers < 1) {
            throw new IllegalArgumentException("numLayers " + numLayers + " < 1");
        }
        try {
            Pattern.compile(commPattern);
        } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException("comm pattern '" + commPattern + "' is not a regex: " + e.getMessage());
        }
        for (String p : prepPatterns) {
            if (p.startsWith("re:")) {
                try {
                    Pattern.compile(p.substring(3));
                } catch (PatternSyntaxException e) {
                    throw new IllegalArgumentException("prep pattern '" + p + "' is not a regex: " + e.getMessage());
                }
            }
        }
    }

    public static HostConfig defaults() {
        return new HostConfig(HostThresholdSet.DEFAULT, DEFAULT_PREP, DEFAULT_COMM, AUTO, 128, 1_000_000, 50_000, null);
    }

    public HostConfig withWindowSource(String source) {
        return new HostConfig(
                thresholds,
                prepPatterns,
                commPattern,
                source,
                rollingSteps,
                maxBufferedIntervals,
                allreduceAfterKernels,
                numLayers);
    }

    public HostConfig withRollingSteps(int steps) {
        return new HostConfig(
                thresholds,
                prepPatterns,
                commPattern,
                windowSource,
                steps,
                maxBufferedIntervals,
                allreduceAfterKernels,
                numLayers);
    }

    public HostConfig withMaxBufferedIntervals(int max) {
        return new HostConfig(
                thresholds,
                prepPatterns,
                commPattern,
                windowSource,
                rollingSteps,
                max,
                allreduceAfterKernels,
                numLayers);
    }

    public HostConfig withAllreduceAfterKernels(int kernels) {
        return new HostConfig(
                thresholds,
                prepPatterns,
                commPattern,
                windowSource,
                rollingSteps,
                maxBufferedIntervals,
                kernels,
                numLayers);
    }

    public HostConfig withNumLayers(Integer layers) {
        return new HostConfig(
                thresholds,
                prepPatterns,
                commPattern,
                windowSource,
                rollingSteps,
                maxBufferedIntervals,
                allreduceAfterKernels,
                layers);
    }

    public HostConfig withThresholds(HostThresholdSet t) {
        return new HostConfig(
                t,
                prepPatterns,
                commPattern,
                windowSource,
                rollingSteps,
                maxBufferedIntervals,
                allreduceAfterKernels,
                numLayers);
    }

    /** Whether {@code source} ({@link #NVTX} ... {@link #ALLREDUCE}) may make windows under this configuration. */
    public boolean allows(String source) {
        return windowSource.equals(AUTO) || windowSource.equals(source);
    }
}
