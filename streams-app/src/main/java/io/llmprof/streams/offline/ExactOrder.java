package io.llmprof.streams.offline;

import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.sequence.LaneSequencer;
import io.llmprof.agent.sequence.ScratchDir;
import java.io.IOException;
import java.util.List;

/**
 * Offline results exact whatever the order of events in the file. The first reading uses the bounded reorder window
 * (fast, and enough for files as profilers write them); when events came out of order beyond it, the analysis is
 * thrown away and the input read again with every lane externally sorted (sorted runs spilled to a temp directory and
 * merged, memory still bounded), with a notice. The same happens when the launch context lost launches (a host
 * lane far ahead of its kernels, as in a large host-first file): the sorted reading interleaves the lanes by time, so
 * every kernel meets its launch. The directory is deleted on {@link #close}.
 */
final class ExactOrder implements AutoCloseable {
    /** One complete analysis of the input with these reader options, from fresh state. */
    @FunctionalInterface
    interface Attempt<T> {
        T run(ReaderOptions options) throws IOException;
    }

    /** Thrown by an attempt that wants the sorted reading (see {@link #sortedIf}). */
    static final class ReadSorted extends RuntimeException {
        ReadSorted(String why) {
            super(why, null, false, false);
        }
    }

    private ScratchDir dir;
    private String why;

    /**
     * Runs {@code attempt} with the bounded reorder window, stopping at the first event beyond it; then, if there was
     * one, again with every lane sorted on disk. Either reading tokenizes a large file's second part on a second
     * thread ({@link ReaderOptions#withSplitRead}): an offline command has the machine to itself.
     */
    <T> T read(ReaderOptions base, Attempt<T> attempt) throws IOException {
        ReaderOptions options = base.withSplitRead(true);
        try {
            return attempt.run(options.withAbortOnLate());
        } catch (LaneSequencer.LateEvent late) {
            why = "events were out of start-time order beyond the reorder window (" + options.reorderWindow()
                    + " events per lane)";
        } catch (ReadSorted r) {
            why = r.getMessage();
        }
        dir = ScratchDir.create(null, "llmprof-sort-");
        return attempt.run(options.withSpillDir(dir.path()));
    }

    /**
     * Called by an attempt before it reports: asks for the sorted reading when {@code launchesLost} &gt; 0 and this
     * is not it already.
     */
    void sortedIf(long launchesLost) {
        sortedIf(launchesLost, 0);
    }

    /** As {@link #sortedIf(long)}, also when top gaps lost their preceding host call the same way. */
    void sortedIf(long launchesLost, long precedingLost) {
        if (dir == null && (launchesLost > 0 || precedingLost > 0)) {
            throw new ReadSorted((launchesLost > 0 ? launchesLost + " kernel launches" : "")
                    + (launchesLost > 0 && precedingLost > 0 ? " and " : "")
                    + (precedingLost > 0 ? "the preceding host call of " + precedingLost + " top gaps" : "")
                    + " were lost because the host lane ran too far ahead of the GPU lane");
        }
    }

    /**
     * Called by a first reading as soon as its launch context loses a launch: the sorted reading is needed anyway
     * (the loss is reported at the end, {@link #sortedIf}), so the rest of the file is not read twice. Kineto writes
     * large traces host first, so this is the common case for them.
     */
    void sortedOnLostLaunch() {
        if (dir == null) {
            throw new ReadSorted("kernel launches were lost because the host lane ran too far ahead of the GPU lane");
        }
    }

    /** The options of a later reading of the same input: sorted when the first reading was, and split as it was. */
    ReaderOptions options(ReaderOptions base) {
        ReaderOptions options = base.withSplitRead(true);
        return dir == null ? options : options.withSpillDir(dir.path());
    }

    List<String> notices() {
        if (dir == null) {
            return List.of();
        }
        return List.of(why + ": the input was read again with every lane sorted on disk and the lanes interleaved by"
                + " time, so the results are exact");
    }

    @Override
    public void close() {
        if (dir != null) {
            dir.close();
        }
    }
}
