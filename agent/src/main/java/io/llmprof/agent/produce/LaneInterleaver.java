package io.llmprof.agent.produce;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReadProgress;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.wire.ProtoTraceBatchSerde;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.stream.Stream;

/**
 * Lets a file's lanes out interleaved by start time, each lane exactly as the reader emitted it. A Kineto file is
 * written host-first, so a reader emits a rank's whole host lane before its first kernel; shipped that way, the
 * streams app holds every marker and host interval until the GPU lane catches up (state values of hundreds of KB
 * rewritten per record). This sink spools each (rank, lane)'s events in the order and with the indexes it received
 * them, then, when the read is over ({@link #finish}), merges the lanes by the start of their next event (ties: host
 * lanes first, then lanes in order of first event) and passes them on, then every {@code endOfTrace} in the order
 * received. A lane's sequence and indexes are untouched (a late event stays where the reader put it), so what the
 * streams app de-duplicates and resumes by is the same as without this sink.
 *
 * <p>Memory is bounded whatever the file size: per lane, up to {@value #CHUNK} events (or about {@value
 * #CHUNK_BYTES} bytes) are held, then written to a spool file in a temp directory (length-prefixed protobuf {@code
 * TraceBatch} chunks, as the offline sort spills them); the merge holds one decoded chunk per lane. A lane that never
 * fills a chunk never touches the disk. The directory is created at the first spill and deleted by {@link #close}
 * (also on failure) or, if the JVM exits first, by a shutdown hook.
 *
 * <p>Problems pass through at once. Not thread-safe: the reading thread drives it.
 */
public final class LaneInterleaver implements OrderedSink, AutoCloseable {
    /** Events per spooled chunk. */
    static final int CHUNK = 4096;

    /** A chunk is also written once its events' names and dims pass this many characters (huge names). */
    static final int CHUNK_BYTES = 1 << 20;

    private static final ProtoTraceBatchSerde SERDE = new ProtoTraceBatchSerde();

    private final OrderedSink out;
    private final Path parent;
    private final ReadProgress progress;
    private final List<Spool> lanes = new ArrayList<>();
    private final Map<String, Spool> byKey = new HashMap<>();
    private final List<Spool> ends = new ArrayList<>();
    private Spool last;
    private Path dir;
    private Thread cleanupOnExit;
    private boolean finished;

    /**
     * @param parent where the spool directory is created when a lane spills; null = the system temp directory
     * @param progress told during {@link #finish} how many events were passed on ({@link ReadProgress#passedOn})
     */
    public LaneInterleaver(OrderedSink out, Path parent, ReadProgress progress) {
        this.out = Objects.requireNonNull(out, "out");
        this.parent = parent;
        this.progress = Objects.requireNonNullElse(progress, ReadProgress.NONE);
    }

    @Override
    public void event(String rank, Lane lane, long index, TraceEvent event) {
        Spool s = last;
        if (s == null || s.lane != lane || !s.rank.equals(rank)) {
            s = spool(rank, lane);
            last = s;
        }
        s.add(index, event);
    }

    @Override
    public void endOfTrace(String rank, Lane lane) {
        ends.add(spool(rank, lane));
    }

    @Override
    public void problem(InputProblem problem) {
        out.problem(problem);
    }

    /** The spool directory while it exists (tests: it must be gone after {@link #close}). */
    public Path spoolDir() {
        return dir;
    }

    /** Events held in memory now, over all lanes. */
    public long held() {
        long n = 0;
        for (Spool s : lanes) {
            n += s.tail.size();
        }
        return n;
    }

    /** Passes every lane on, interleaved by start time, then the ends of trace. Call once, when the read is over. */
    public void finish() {
        if (finished) {
            throw new IllegalStateException("already finished");
        }
        finished = true;
        long total = 0;
        PriorityQueue<Cursor> heads = new PriorityQueue<>(
                Comparator.comparingLong((Cursor c) -> c.current.startNs()).thenComparingInt(c -> c.spool.order));
        List<Cursor> open = new ArrayList<>();
        try {
            List<Spool> ordered = new ArrayList<>(lanes);
            // Ties between lanes: host first (a launch starts before its kernel), then first seen.
            ordered.sort(Comparator.comparing((Spool s) -> s.lane != Lane.HOST).thenComparingInt(s -> s.seen));
            for (int i = 0; i < ordered.size(); i++) {
                Spool s = ordered.get(i);
                s.order = i;
                total += s.count;
                Cursor c = s.cursor();
                open.add(c);
                if (c.advance()) {
                    heads.add(c);
                }
            }
            long passed = 0;
            while (!heads.isEmpty()) {
                Cursor c = heads.poll();
                out.event(c.spool.rank, c.spool.lane, c.index, c.current);
                if (++passed % CHUNK == 0) {
                    progress.passedOn(passed, total);
                }
                if (c.advance()) {
                    heads.add(c);
                }
            }
            progress.passedOn(passed, total);
        } finally {
            open.forEach(Cursor::close);
        }
        for (Spool s : ends) {
            out.endOfTrace(s.rank, s.lane);
        }
    }

    /** Deletes the spool directory. */
    @Override
    public void close() {
        for (Spool s : lanes) {
            s.closeWriter();
        }
        deleteDir();
        if (cleanupOnExit != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(cleanupOnExit);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs or has run
            }
            cleanupOnExit = null;
        }
    }

    private void deleteDir() {
        Path d = dir;
        if (d == null || !Files.exists(d)) {
            return;
        }
        try (Stream<Path> all = Files.walk(d)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the lane spool " + d + ": " + e.getMessage(), e);
        }
    }

    private Spool spool(String rank, Lane lane) {
        return byKey.computeIfAbsent(rank + '\u0000' + lane.name(), k -> {
            Spool s = new Spool(rank, lane, lanes.size());
            lanes.add(s);
            return s;
        });
    }

    private Path dir() throws IOException {
        if (dir == null) {
            dir = parent == null
                    ? Files.createTempDirectory("llmprof-interleave-")
                    : Files.createTempDirectory(Files.createDirectories(parent), "llmprof-interleave-");
            Path d = dir;
            cleanupOnExit = new Thread(
                    () -> {
                        try {
                            deleteDir();
                        } catch (RuntimeException e) {
                            // exiting anyway: a temp directory left behind
                        }
                    },
                    "llmprof-interleave-cleanup " + d.getFileName());
            try {
                Runtime.getRuntime().addShutdownHook(cleanupOnExit);
            } catch (IllegalStateException shuttingDown) {
                cleanupOnExit = null; // the JVM is exiting: close() still deletes it if this read gets that far
            }
        }
        return dir;
    }

    /** One (rank, lane): its spooled chunks, then the events held. */
    private final class Spool {
        final String rank;
        final Lane lane;
        final int seen;
        int order;
        long firstIndex = -1;
        long count;
        final List<TraceEvent> tail = new ArrayList<>();
        long tailChars;
        Path file;
        DataOutputStream writer;

        Spool(String rank, Lane lane, int seen) {
            this.rank = rank;
            this.lane = lane;
            this.seen = seen;
        }

        void add(long index, TraceEvent event) {
            if (finished) {
                throw new IllegalStateException("event after finish for " + rank + "/" + lane);
            }
            if (firstIndex < 0) {
                firstIndex = index;
            } else if (index != firstIndex + count) {
                throw new IllegalStateException("index " + index + " out of sequence for " + rank + "/" + lane);
            }
            tail.add(event);
            count++;
            tailChars += event.name().length()
                    + (event.inputDims() == null ? 0 : event.inputDims().length());
            if (tail.size() >= CHUNK || tailChars >= CHUNK_BYTES) {
                spill();
            }
        }

        private void spill() {
            try {
                if (writer == null) {
                    file = Files.createTempFile(dir(), "lane-", ".pb");
                    writer = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file), 1 << 16));
                }
                byte[] bytes = SERDE.encode(new TraceBatch("-", "-", "-", lane, "-", 0, tail, false));
                writer.writeInt(bytes.length);
                writer.write(bytes);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot spool events to " + dir + ": " + e.getMessage(), e);
            }
            tail.clear();
            tailChars = 0;
        }

        void closeWriter() {
            if (writer != null) {
                try {
                    writer.close();
                } catch (IOException e) {
                    // the file is deleted with the directory
                }
                writer = null;
            }
        }

        Cursor cursor() {
            if (writer != null) {
                try {
                    writer.close();
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot spool events to " + dir + ": " + e.getMessage(), e);
                }
                writer = null;
            }
            return new Cursor(this);
        }
    }

    /** Reads a lane back: its file's chunks, then its tail. */
    private static final class Cursor {
        final Spool spool;
        private DataInputStream in;
        private List<TraceEvent> chunk = List.of();
        private int next;
        private boolean tailDone;
        long index;
        TraceEvent current;

        Cursor(Spool spool) {
            this.spool = spool;
            this.index = spool.firstIndex - 1;
            if (spool.file != null) {
                try {
                    in = new DataInputStream(new BufferedInputStream(Files.newInputStream(spool.file), 1 << 16));
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot read spooled events " + spool.file + ": " + e, e);
                }
            }
        }

        boolean advance() {
            while (next == chunk.size()) {
                if (!nextChunk()) {
                    current = null;
                    return false;
                }
            }
            current = chunk.get(next++);
            index++;
            return true;
        }

        private boolean nextChunk() {
            next = 0;
            if (in != null) {
                try {
                    int length;
                    try {
                        length = in.readInt();
                    } catch (EOFException end) {
                        close();
                        return nextChunk();
                    }
                    chunk = SERDE.decode(in.readNBytes(length)).events();
                    return true;
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot read spooled events " + spool.file + ": " + e, e);
                }
            }
            if (!tailDone) {
                tailDone = true;
                chunk = spool.tail;
                return true;
            }
            chunk = List.of();
            return false;
        }

        void close() {
            if (in != null) {
                try {
                    in.close();
                } catch (IOException e) {
                    // the file is deleted with the directory
                }
                in = null;
            }
        }
    }
}
