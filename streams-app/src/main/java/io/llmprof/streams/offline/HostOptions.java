package io.llmprof.streams.offline;

import io.llmprof.events.host.HostThresholdSet;
import io.llmprof.streams.host.HostConfig;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** Host-overhead options shared by {@code analyze host} and the streams app. */
public final class HostOptions {
    @Option(
            names = "--threshold",
            paramLabel = "[PHASE.]KEY=VALUE",
            description = "Override a threshold (keys m1 m2 m3a m3b m3c m4 m5; phases all, context, generation),"
                    + " e.g. m1=0.35 or generation.m4=0.75. Repeatable.")
    List<String> thresholds = new ArrayList<>();

    @Option(
            names = "--prep-pattern",
            paramLabel = "PATTERN",
            description = "Host-prep NVTX/annotation name (substring; 're:' prefix for a regex). Repeatable; replaces"
                    + " the defaults _prepare_tp_inputs, _prepare_inputs, prepare_inputs.")
    List<String> prepPatterns = new ArrayList<>();

    @Option(
            names = "--window-source",
            paramLabel = "SOURCE",
            defaultValue = "auto",
            description = "Step windows from: auto (nvtx > marker > pass > allreduce), nvtx, marker, pass, allreduce."
                    + " Default: ${DEFAULT-VALUE}.")
    String windowSource = "auto";

    public HostOptions() {}

    /**
     * The configuration these options describe on top of the defaults.
     *
     * @param rollingSteps steps per rolling verdict (0 = the whole run)
     * @param numLayers layer count for the HOST_SYNC finding, or null
     * @throws IllegalArgumentException with a message a person can act on
     */
    public HostConfig resolve(int rollingSteps, Integer numLayers) {
        HostConfig d = HostConfig.defaults();
        HostThresholdSet t = d.thresholds().with(thresholds);
        String source = windowSource == null ? "auto" : windowSource.trim().toLowerCase(java.util.Locale.ROOT);
        if (!HostConfig.SOURCES.contains(source)) {
            throw new IllegalArgumentException(
                    "--window-source must be auto, nvtx, marker, pass or allreduce, not '" + windowSource + "'");
        }
        return new HostConfig(
                t,
                prepPatterns.isEmpty() ? d.prepPatterns() : List.copyOf(prepPatterns),
                d.commPattern(),
                source,
                rollingSteps,
                d.maxBufferedIntervals(),
                d.allreduceAfterKernels(),
                numLayers);
    }
}
