package io.llmprof.agent.kineto;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Reader settings.
 *
 * @param reorderWindow events buffered per (rank, lane) to restore start-time order; memory is bounded by it
 * @param maxProblemsKept problems kept in {@link ReadSummary#problems()}; later ones are still counted,
 *     logged (rate-limited) and passed to {@link OrderedSink#problem}
 * @param progress told of input bytes consumed
 * @param spillDir null: events beyond the reorder window are emitted late (live); else every lane comes out in exact
 *     start-time order, sorted runs of {@code reorderWindow} events spilled to this directory (offline, see {@link
 *     io.llmprof.agent.sequence.LaneSequencer}); a lane is then emitted when the file ends
 * @param abortOnLate the read stops with {@link io.llmprof.agent.sequence.LaneSequencer.LateEvent} at the first
 *     event beyond the reorder window, so that an offline analysis can start again sorted at once
 * @param interleaveLanes each lane as the reader emits it, but the lanes of a file let out interleaved by start time
 *     as soon as that order is decided, through a spool on disk for the lane that runs ahead ({@link
 *     io.llmprof.agent.produce.LaneInterleaver}): what {@code agent
 *     replay} and {@code watch} ship. Applied by {@link io.llmprof.agent.produce.TraceReaders#read} (the format
 *     readers refuse it); no effect with a {@code spillDir}, whose lanes come out interleaved anyway
 * @param releaseQuietLanes a lane that has had no event for {@code reorderWindow} file entries lets out what it
 *     holds at once (see {@link io.llmprof.agent.sequence.LaneSequencer#release}); an event of it that comes later
 *     and earlier than those is then late, counted and reported as any; no effect with a {@code spillDir}. Read by
 *     the Kineto reader only: an Nsight export's lanes already come merged by start time (one ordered query each)
 * @param splitRead a large Kineto file's second part (gzipped: inflated) is tokenized on a second thread while the
 *     reading thread goes through the first ({@link SplitAhead}): same calls, same order, same results; for an
 *     offline command on a machine with a core to spare. Off by default (the live agent shares its cores with Kafka)
 * @param inputDims cpu_ops carry their Input Dims ({@link io.llmprof.events.TraceEvent#inputDims()}), the default;
 *     false for a reading whose analysis never looks at them ({@code analyze layers}, {@code host}, {@code perfetto},
 *     the first reading of {@code kernels}): the
 *     reader skips them as any other arg instead of copying them out (a twentieth of the reading thread)
 * @param exactOrder every lane in exact start-time order whatever the file's, the lanes interleaved by time, let out
 *     when the file ends: {@link io.llmprof.agent.produce.TraceReaders#read} sorts each lane in runs of {@code
 *     reorderWindow} events (in memory within {@link io.llmprof.agent.sequence.MemoryBudget#JVM}, else in a temp
 *     directory of its own) as a {@code spillDir} does. What {@code agent replay} and {@code watch} ship by default:
 *     no event is ever late, and the indexes do not depend on the window
 */
public record ReaderOptions(
        int reorderWindow,
        int maxProblemsKept,
        ReadProgress progress,
        Path spillDir,
        boolean abortOnLate,
        boolean interleaveLanes,
        boolean releaseQuietLanes,
        boolean splitRead,
        boolean inputDims,
        boolean exactOrder) {
    public static final int DEFAULT_REORDER_WINDOW = 65_536;
    public static final int DEFAULT_MAX_PROBLEMS_KEPT = 1_000;

    public ReaderOptions {
        if (reorderWindow < 1) {
            throw new IllegalArgumentException("reorderWindow must be >= 1, got " + reorderWindow);
        }
        if (maxProblemsKept < 0) {
            throw new IllegalArgumentException("maxProblemsKept must be >= 0, got " + maxProblemsKept);
        }
        progress = Objects.requireNonNullElse(progress, ReadProgress.NONE);
    }

    public ReaderOptions(int reorderWindow, int maxProblemsKept, ReadProgress progress) {
        this(reorderWindow, maxProblemsKept, progress, null, false, false, false, false, true, false);
    }

    public static ReaderOptions defaults() {
        return new ReaderOptions(DEFAULT_REORDER_WINDOW, DEFAULT_MAX_PROBLEMS_KEPT, ReadProgress.NONE);
    }

    /**
     * What {@code agent replay} and {@code agent watch} ship by default: every lane in exact order, the lanes
     * interleaved by time (with {@code --no-exact-order}: as read, within the window, interleaved as they come).
     */
    public static ReaderOptions shipping() {
        return defaults().withInterleavedLanes(true).withExactOrder(true);
    }

    public ReaderOptions withReorderWindow(int window) {
        return copy(o -> o.reorderWindow = window);
    }

    public ReaderOptions withProgress(ReadProgress listener) {
        return copy(o -> o.progress = listener);
    }

    /** Exact order whatever the file's, spilling sorted runs to {@code dir} (created when needed). */
    public ReaderOptions withSpillDir(Path dir) {
        return copy(o -> {
            o.spillDir = dir;
            o.abortOnLate = false;
        });
    }

    /** Stop at the first event beyond the reorder window instead of emitting it late. */
    public ReaderOptions withAbortOnLate() {
        return copy(o -> o.abortOnLate = true);
    }

    /**
     * Lanes interleaved by start time (true) or each (rank, lane) as the reader emits it, a file's host lane first
     * (false).
     */
    public ReaderOptions withInterleavedLanes(boolean interleave) {
        return copy(o -> o.interleaveLanes = interleave);
    }

    /**
     * Quiet lanes released (true): what a lane holds for its reorder window is let out, in order, once the file has
     * gone {@code reorderWindow} entries past the lane's last event. Set by {@link
     * io.llmprof.agent.produce.TraceReaders#read} for interleaved lanes, so that a sparse host lane does not hold its
     * rank's merge until the end of the file.
     */
    public ReaderOptions withQuietLanesReleased(boolean release) {
        return copy(o -> o.releaseQuietLanes = release);
    }

    /**
     * A large file's second part tokenized ahead on a second thread (true), or the whole file on the reading
     * thread (false, the default).
     */
    public ReaderOptions withSplitRead(boolean split) {
        return copy(o -> o.splitRead = split);
    }

    /**
     * cpu_ops with their Input Dims (true, the default), or without (false): for an analysis that never reads them,
     * which the reader then skips.
     */
    public ReaderOptions withInputDims(boolean dims) {
        return copy(o -> o.inputDims = dims);
    }

    /** Every lane sorted whatever the file's order (true), or the bounded reorder window (false, the default). */
    public ReaderOptions withExactOrder(boolean exact) {
        return copy(o -> o.exactOrder = exact);
    }

    /** These options with the changes {@code edit} makes; the canonical constructor validates them. */
    private ReaderOptions copy(java.util.function.Consumer<Copy> edit) {
        Copy o = new Copy(this);
        edit.accept(o);
        return new ReaderOptions(
                o.reorderWindow,
                o.maxProblemsKept,
                o.progress,
                o.spillDir,
                o.abortOnLate,
                o.interleaveLanes,
                o.releaseQuietLanes,
                o.splitRead,
                o.inputDims,
                o.exactOrder);
    }

    /** The components of options being derived, written once for every {@code with*} method. */
    private static final class Copy {
        int reorderWindow;
        int maxProblemsKept;
        ReadProgress progress;
        Path spillDir;
        boolean abortOnLate;
        boolean interleaveLanes;
        boolean releaseQuietLanes;
        boolean splitRead;
        boolean inputDims;
        boolean exactOrder;

        Copy(ReaderOptions from) {
            reorderWindow = from.reorderWindow;
            maxProblemsKept = from.maxProblemsKept;
            progress = from.progress;
            spillDir = from.spillDir;
            abortOnLate = from.abortOnLate;
            interleaveLanes = from.interleaveLanes;
            releaseQuietLanes = from.releaseQuietLanes;
            splitRead = from.splitRead;
            inputDims = from.inputDims;
            exactOrder = from.exactOrder;
        }
    }
}
