package io.llmprof.agent.produce;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.nsys.NsysReader;
import io.llmprof.agent.sequence.ScratchDir;
import io.llmprof.events.AnomalyKind;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Picks the reader of a trace file: an SQLite database (by its header, whatever the extension) goes to {@link
 * NsysReader}, an {@code .nsys-rep} report is refused with a clear problem (export it with {@code nsys export
 * --type sqlite}), anything else is a Kineto JSON trace.
 */
public final class TraceReaders {
    private static final Logger LOG = LoggerFactory.getLogger(TraceReaders.class);

    private TraceReaders() {}

    /**
     * Reads a file to the sink. With {@link ReaderOptions#exactOrder()} every lane comes sorted, the lanes interleaved
     * by time, when the file ends. Else, with {@link ReaderOptions#interleaveLanes()} (and no spill directory) the
     * lanes reach the sink interleaved by start time, from a rank's first event in its second lane on ({@link
     * LaneInterleaver}); problems as found.
     */
    public static ReadSummary read(Path file, ReaderOptions options, OrderedSink sink) throws IOException {
        // A lane that went quiet (the host lane of a host-first file, once its kernels come) lets its reorder
        // buffer out, so that the merge can start before the end of the file.
        return read(file, options, sink, true);
    }

    /**
     * As {@link #read(Path, ReaderOptions, OrderedSink)} for an offline analysis: with interleaved lanes, no lane
     * lets its reorder buffer out early ({@link ReaderOptions#releaseQuietLanes()}), so an event the file has out of
     * order is either put in its place or found late, never passed on late without notice. An Nsight export is read
     * as it is: its reader already lets the lanes out merged by start.
     */
    public static ReadSummary readExact(Path file, ReaderOptions options, OrderedSink sink) throws IOException {
        if (NsysReader.isSqlite(file)) {
            return readAsIs(file, options.withInterleavedLanes(false), sink);
        }
        return read(file, options, sink, false);
    }

    /**
     * Every lane in exact start-time order whatever the order of the file ({@link ReaderOptions#exactOrder}), as the
     * offline analyses read a file they found out of order: each lane sorted in runs of the reorder window (kept in
     * memory within the JVM's budget, else spilled to a temp directory deleted at the end), merged, and the lanes
     * interleaved by time when the file ends. No event is ever late; nothing goes to the sink before the file's end.
     */
    private static ReadSummary readSorted(Path file, ReaderOptions options, OrderedSink sink) throws IOException {
        try (ScratchDir dir = ScratchDir.create(null, "llmprof-sort-")) {
            return readAsIs(file, options.withInterleavedLanes(false).withSpillDir(dir.path()), sink);
        }
    }

    private static ReadSummary read(Path file, ReaderOptions options, OrderedSink sink, boolean releaseQuietLanes)
            throws IOException {
        if (options.exactOrder() && options.spillDir() == null) {
            return readSorted(file, options, sink);
        }
        ReaderOptions asRead = options.withInterleavedLanes(false);
        if (!options.interleaveLanes() || options.spillDir() != null) {
            return readAsIs(file, asRead, sink);
        }
        try (LaneInterleaver lanes = new LaneInterleaver(sink, null, options.progress())) {
            ReadSummary summary = readAsIs(file, asRead.withQuietLanesReleased(releaseQuietLanes), lanes);
            lanes.finish();
            return summary;
        }
    }

    private static ReadSummary readAsIs(Path file, ReaderOptions options, OrderedSink sink) throws IOException {
        if (NsysReader.isNsysReport(file.getFileName().toString()) && !NsysReader.isSqlite(file)) {
            long size = Files.size(file);
            String message = "Nsight Systems .nsys-rep reports are not supported: export them with"
                    + " `nsys export --type sqlite " + file.getFileName() + "` and give the agent the .sqlite file";
            InputProblem problem = new InputProblem(AnomalyKind.INVALID_INPUT, file.toString(), 0, message, "");
            LOG.warn("{}: {}", file, message);
            sink.problem(problem);
            return new ReadSummary(size, 0, 0, 0, 0, List.of(problem), Set.of(), size, 1, false);
        }
        if (NsysReader.isSqlite(file)) {
            return NsysReader.read(file, options, sink);
        }
        return KinetoReader.read(file, options, sink);
    }

    /** True when the file can be read now: a whole SQLite database, or one complete JSON document. */
    public static boolean isComplete(Path file) {
        if (NsysReader.isSqlite(file)) {
            return NsysReader.isCompleteDatabase(file);
        }
        return KinetoReader.isCompleteDocument(file);
    }
}
