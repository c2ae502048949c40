package io.llmprof.events.host;

import java.util.List;

/**
 * Kernel-level drill-down of one rank (ANALYSIS.md section 3), bounded whatever the trace size.
 *
 * @param gaps inter-kernel gaps per (device, stream), at most 64 streams
 * @param graph graph coverage
 * @param launches launch API statistics by name, at most 32 names, most time first
 * @param findings hotspot findings, most severe first
 * @param eager the kernels not launched from a graph, with their launch source (null where not measured)
 */
public record HostDrillDown(
        List<StreamGaps> gaps,
        GraphCoverage graph,
        List<LaunchStat> launches,
        List<Finding> findings,
        EagerKernels eager) {
    /** Bucket labels of {@link StreamGaps#counts()}. */
    public static final List<String> GAP_BUCKETS =
            List.of("<1us", "1-5us", "5-10us", "10-50us", "50-100us", "100-500us", "0.5-1ms", "1-5ms", ">5ms");
    /** Exclusive upper bounds (ns) of the buckets but the last. */
    public static final long[] GAP_BOUNDS_NS = {1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000, 5_000_000};

    public HostDrillDown {
        gaps = gaps == null ? List.of() : List.copyOf(gaps);
        launches = launches == null ? List.of() : List.copyOf(launches);
        findings = findings == null ? List.of() : List.copyOf(findings);
    }

    /** Without the eager-kernel list. */
    public HostDrillDown(
            List<StreamGaps> gaps, GraphCoverage graph, List<LaunchStat> launches, List<Finding> findings) {
        this(gaps, graph, launches, findings, null);
    }

    /**
     * Kernels not replayed from a graph, by (kernel name, launch source).
     *
     * @param kernels eager kernels seen
     * @param totalNs their GPU time
     * @param top the (kernel, source) pairs with the most GPU time, most first (at most 10)
     * @param otherPairs pairs not in {@code top}; with {@code pairsCapped} a lower bound
     * @param otherKernels kernels of those pairs
     * @param otherNs their GPU time
     * @param pairsCapped pairs beyond the tracked bound were counted in the totals only
     */
    public record EagerKernels(
            long kernels,
            long totalNs,
            List<EagerKernel> top,
            long otherPairs,
            long otherKernels,
            long otherNs,
            boolean pairsCapped) {
        public EagerKernels {
            top = top == null ? List.of() : List.copyOf(top);
        }
    }

    /**
     * @param source what launched it: {@code cpu_op NAME} or {@code annotation NAME} (the innermost frame open on
     *     the launching thread), or a parenthesised reason when none is known
     * @param count kernels of this name from this source
     * @param totalNs their GPU time
     */
    public record EagerKernel(String kernel, String source, long count, long totalNs) {}

    /** Index into {@link #GAP_BUCKETS} of a gap. */
    public static int bucket(long gapNs) {
        for (int i = 0; i < GAP_BOUNDS_NS.length; i++) {
            if (gapNs < GAP_BOUNDS_NS[i]) {
                return i;
            }
        }
        return GAP_BOUNDS_NS.length;
    }

    /**
     * Gaps between consecutive GPU operations of one stream (next start - previous end, only when positive).
     *
     * @param counts one count per {@link #GAP_BUCKETS} entry
     * @param totalNs sum of all gaps
     * @param top the largest gaps, largest first (at most 10)
     */
    public record StreamGaps(Integer device, Long stream, List<Long> counts, long totalNs, List<TopGap> top) {
        public StreamGaps {
            counts = List.copyOf(counts);
            top = top == null ? List.of() : List.copyOf(top);
        }
    }

    /**
     * One large gap and what the host was doing when it closed.
     *
     * @param before name of the GPU operation that ended at {@code startNs}
     * @param after name of the GPU operation that started at {@code endNs}
     * @param preceding the last runtime API call (other than the launch of {@code after}) or NVTX range that
     *     started before {@code endNs}, null when none is known
     * @param precedingKind {@code api} or {@code nvtx}, null with {@code preceding}
     * @param stepIndex the step window holding the gap's end, null when outside every window
     */
    public record TopGap(
            long startNs,
            long endNs,
            long gapNs,
            String before,
            String after,
            String preceding,
            String precedingKind,
            Long stepIndex) {}

    /**
     * @param graphLaunches graph launch API calls ({@code cudaGraphLaunch}, {@code hipGraphLaunch})
     * @param ratio graphKernels / kernels, null without kernels
     */
    public record GraphCoverage(long kernels, long graphKernels, long graphLaunches, Double ratio) {}

    /** @param perStep calls per completed step window, null before the first */
    public record LaunchStat(String name, long calls, long totalNs, long maxNs, Double perStep) {}

    /**
     * @param kind HOST_SYNC, SYNC, ALLOC, GRAPH_BREAK, GC or COMM
     * @param severity HIGH, MEDIUM or LOW
     * @param evidence the figures behind the finding, one per line
     */
    public record Finding(String kind, String severity, String summary, List<String> evidence) {
        public static final List<String> KINDS = List.of("HOST_SYNC", "SYNC", "ALLOC", "GRAPH_BREAK", "GC", "COMM");

        public Finding {
            evidence = evidence == null ? List.of() : List.copyOf(evidence);
        }
    }
}
