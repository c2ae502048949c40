package io.llmprof.agent.produce;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReadProgress;
import io.llmprof.agent.sequence.MemoryBudget;
import io.llmprof.agent.sequence.ScratchDir;
import io.llmprof.agent.sequence.SpoolChunks;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;

/**
 * Lets a file's lanes out interleaved by start time, each lane exactly as the reader emitted it. A Kineto file is
 * written host-first, so a reader emits a rank's whole host lane before its first kernel; shipped that way, the
 * streams app holds every marker and host interval until the GPU lane catches up (state values of hundreds of KB
 * rewritten per record). This sink queues each (rank, lane)'s events in the order and with the indexes it received
 * them, and passes a rank's events on merged by the start of each lane's next event (ties: the host event first) as
 * soon as that is decided: once the rank has both a host and a GPU lane, the earlier of the two lanes' next events
 * goes on whenever both lanes have one queued. So a host-first file starts going out at its first kernel, not when
 * it has been read (a Kineto file with CUDA graph launches has 1 % of its bytes before the first kernel; one with
 * eager launches about two thirds). The rest goes at {@link #finish}: every lane merged the same way, the ranks
 * interleaved by time (ties: host lanes first, then lanes in order of first event), then every {@code endOfTrace}
 * in the order received. Each rank's sequence is the one a merge of its whole lanes gives, and a lane's sequence
 * and indexes are untouched (a late event stays where the reader put it), so what the streams app de-duplicates and
 * resumes by is the same as without this sink.
 *
 * <p>Memory is bounded whatever the file size: per lane, up to {@value #CHUNK} queued events (or about {@value
 * #CHUNK_BYTES} bytes) are held, then set aside as a chunk. A chunk stays in memory while every interleaver of the
 * JVM together holds at most {@link MemoryBudget#JVM} of set-aside events (an eighth of the heap, 48 to 256 MiB;
 * estimated, {@link MemoryBudget#bytes(List)}); past
 * that it is written to a spool file in a temp directory (length-prefixed protobuf {@code TraceBatch} chunks, as the
 * offline sort spills them), which the merge reads back a chunk at a time while it is still being written. So a
 * host-first file of a hundred MB or two is merged without encoding, writing, reading and decoding its host lane
 * (a seventh of the reading thread's time on a 140 MB trace), and a larger one still holds a bounded amount. A lane
 * that never writes a chunk never touches the disk. The directory is created at the first write and deleted by
 * {@link #close} (also on failure) or, if the JVM exits first, by a shutdown hook.
 *
 * <p>Problems pass through at once. Not thread-safe: the reading thread drives it, and its {@link #event} calls pass
 * events on to the sink.
 */
public final class LaneInterleaver implements OrderedSink, AutoCloseable {
    /** Events per spooled chunk. */
    static final int CHUNK = 4096;

    /** A chunk is also written once its events' names and dims pass this many characters (huge names). */
    static final int CHUNK_BYTES = 1 << 20;

    private final OrderedSink out;
    private final Path parent;
    private final ReadProgress progress;
    private final MemoryBudget budget;
    private final List<Spool> lanes = new ArrayList<>();
    private final Map<String, Rank> ranks = new HashMap<>();
    private final List<Spool> ends = new ArrayList<>();
    private Spool last;
    private ScratchDir dir;
    private boolean finished;
    private long received;
    private long passed;

    /**
     * @param parent where the spool directory is created when a lane spills; null = the system temp directory
     * @param progress told how many of the events received so far were passed on ({@link ReadProgress#passedOn})
     */
    public LaneInterleaver(OrderedSink out, Path parent, ReadProgress progress) {
        this(out, parent, progress, MemoryBudget.JVM);
    }

    /** @param budget what set-aside chunks may hold in memory before they go to disk */
    LaneInterleaver(OrderedSink out, Path parent, ReadProgress progress, MemoryBudget budget) {
        this.out = Objects.requireNonNull(out, "out");
        this.parent = parent;
        this.progress = Objects.requireNonNullElse(progress, ReadProgress.NONE);
        this.budget = Objects.requireNonNull(budget, "budget");
    }

    @Override
    public void event(String rank, Lane lane, long index, TraceEvent event) {
        Spool s = last;
        if (s == null || s.lane != lane || !s.rank.equals(rank)) {
            s = spool(rank, lane);
            last = s;
        }
        s.add(index, event);
        received++;
        s.owner.passOnDecided();
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
        return dir == null ? null : dir.path();
    }

    /** Events held in memory now, over all lanes. */
    public long held() {
        long n = 0;
        for (Spool s : lanes) {
            n += s.held();
        }
        return n;
    }

    /** Events passed on so far. */
    public long passedOn() {
        return passed;
    }

    /** Passes every event still queued on, interleaved by start time, then the ends of trace. Call once, when the read is over. */
    public void finish() {
        if (finished) {
            throw new IllegalStateException("already finished");
        }
        finished = true;
        List<Spool> ordered = new ArrayList<>(lanes);
        // Ties between lanes: host first (a launch starts before its kernel), then first seen.
        ordered.sort(Comparator.comparing((Spool s) -> s.lane != Lane.HOST).thenComparingInt(s -> s.seen));
        PriorityQueue<Spool> heads = new PriorityQueue<>(
                Comparator.comparingLong((Spool s) -> s.peek().startNs()).thenComparingInt(s -> s.order));
        for (int i = 0; i < ordered.size(); i++) {
            Spool s = ordered.get(i);
            s.order = i;
            if (s.peek() != null) {
                heads.add(s);
            }
        }
        while (!heads.isEmpty()) {
            Spool s = heads.poll();
            s.passOn();
            if (s.peek() != null) {
                heads.add(s);
            }
        }
        progress.passedOn(passed, received);
        for (Spool s : ends) {
            out.endOfTrace(s.rank, s.lane);
        }
    }

    /** Deletes the spool directory and gives back what its chunks held of the memory budget. */
    @Override
    public void close() {
        for (Spool s : lanes) {
            s.closeFiles();
            s.releaseChunks();
        }
        if (dir != null) {
            dir.close();
        }
    }

    private Spool spool(String rank, Lane lane) {
        Rank r = ranks.computeIfAbsent(rank, Rank::new);
        Spool s = lane == Lane.HOST ? r.host : r.gpu;
        if (s == null) {
            s = new Spool(r, lane, lanes.size());
            lanes.add(s);
            if (lane == Lane.HOST) {
                r.host = s;
            } else {
                r.gpu = s;
            }
        }
        return s;
    }

    private Path dir() throws IOException {
        if (dir == null) {
            dir = ScratchDir.create(parent, "llmprof-interleave-");
        }
        return dir.path();
    }

    /** One rank's two lanes. */
    private static final class Rank {
        final String rank;
        Spool host;
        Spool gpu;

        Rank(String rank) {
            this.rank = rank;
        }

        /**
         * Passes on what the merge of the two lanes has decided: while both have an event queued, the earlier
         * (ties: the host's). Until the rank has both lanes nothing is decided: the other lane may start earlier.
         */
        void passOnDecided() {
            if (host == null || gpu == null) {
                return;
            }
            while (true) {
                TraceEvent h = host.peek();
                if (h == null) {
                    return;
                }
                TraceEvent g = gpu.peek();
                if (g == null) {
                    return;
                }
                (g.startNs() < h.startNs() ? gpu : host).passOn();
            }
        }
    }

    /** A set-aside chunk: its events while they are in memory, else null (the next chunk of the spool file). */
    private record Chunk(List<TraceEvent> events, long bytes) {}

    /**
     * One (rank, lane)'s queue: its set-aside chunks (in memory, or on disk and read back one decoded chunk at a
     * time), then the events held in memory.
     */
    private final class Spool {
        final Rank owner;
        final String rank;
        final Lane lane;
        final int seen;
        int order;
        long firstIndex = -1;
        long count;
        long passedOn;
        /** Queued events in memory: {@code tail[tailHead..]}; those before were passed on. */
        final ArrayList<TraceEvent> tail = new ArrayList<>();

        int tailHead;
        long tailChars;
        Path file;
        DataOutputStream writer;
        DataInputStream reader;
        /** Set-aside chunks, in order. */
        final ArrayDeque<Chunk> chunks = new ArrayDeque<>();
        /** Events of the set-aside chunks kept in memory. */
        long chunkedInMemory;
        /** The chunk taken last, passed on up to {@code chunkPos}. */
        List<TraceEvent> chunk = List.of();

        int chunkPos;

        Spool(Rank owner, Lane lane, int seen) {
            this.owner = owner;
            this.rank = owner.rank;
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
            tailChars += MemoryBudget.chars(event);
            if (tail.size() - tailHead >= CHUNK || tailChars >= CHUNK_BYTES) {
                spill();
            }
        }

        /** Events in memory: the queue's tail, the chunk being passed on and the chunks kept in memory. */
        long held() {
            return tail.size() - tailHead + chunk.size() - chunkPos + chunkedInMemory;
        }

        /** The next queued event, or null when none is queued now. */
        TraceEvent peek() {
            if (chunkPos < chunk.size()) {
                return chunk.get(chunkPos);
            }
            while (!chunks.isEmpty()) {
                takeChunk();
                if (!chunk.isEmpty()) {
                    return chunk.get(0);
                }
            }
            return tailHead < tail.size() ? tail.get(tailHead) : null;
        }

        /** Passes the event {@link #peek} gave on. */
        void passOn() {
            TraceEvent e;
            if (chunkPos < chunk.size()) {
                e = chunk.get(chunkPos++);
                if (chunkPos == chunk.size()) {
                    chunk = List.of();
                    chunkPos = 0;
                }
            } else {
                e = tail.get(tailHead++);
                tailChars -= MemoryBudget.chars(e);
                if (tailHead == tail.size()) {
                    tail.clear();
                    tailHead = 0;
                    tailChars = 0;
                } else if (tailHead >= CHUNK) {
                    tail.subList(0, tailHead).clear(); // a lane that is never emptied: keep the list bounded
                    tailHead = 0;
                }
            }
            long index = firstIndex + passedOn++;
            passed++;
            out.event(rank, lane, index, e);
            if (passed % CHUNK == 0) {
                progress.passedOn(passed, received);
            }
        }

        /**
         * Sets the events queued in memory aside as one chunk: kept in memory while the budget allows, else written
         * to the spool file, flushed so that {@link #peek} can read it back.
         */
        private void spill() {
            List<TraceEvent> queued = tailHead == 0 ? tail : tail.subList(tailHead, tail.size());
            long bytes = MemoryBudget.bytes(queued);
            if (budget.tryReserve(bytes)) {
                chunks.add(new Chunk(new ArrayList<>(queued), bytes));
                chunkedInMemory += queued.size();
            } else {
                try {
                    if (writer == null) {
                        file = Files.createTempFile(dir(), "lane-", ".pb");
                        writer = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file), 1 << 16));
                    }
                    SpoolChunks.write(writer, lane, queued);
                    writer.flush();
                } catch (IOException e) {
                    throw new UncheckedIOException("cannot spool events to " + spoolDir() + ": " + e.getMessage(), e);
                }
                chunks.add(new Chunk(null, 0));
            }
            tail.clear();
            tailHead = 0;
            tailChars = 0;
        }

        /** Makes the next set-aside chunk the one being passed on (its memory back to the budget). */
        private void takeChunk() {
            Chunk c = chunks.poll();
            if (c.events != null) {
                chunk = c.events;
                chunkedInMemory -= chunk.size();
                budget.release(c.bytes);
                chunkPos = 0;
                return;
            }
            try {
                if (reader == null) {
                    reader = new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16));
                }
                chunk = SpoolChunks.read(reader);
                if (chunk == null) {
                    throw new EOFException("no chunk left");
                }
                chunkPos = 0;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read spooled events " + file + ": " + e, e);
            }
        }

        /** Drops the chunks kept in memory (a read that stopped early) and gives their budget back. */
        void releaseChunks() {
            for (Chunk c : chunks) {
                budget.release(c.bytes);
            }
            chunks.clear();
            chunkedInMemory = 0;
        }

        void closeFiles() {
            for (Closeable c : new Closeable[] {writer, reader}) {
                if (c != null) {
                    try {
                        c.close();
                    } catch (IOException e) {
                        // the file is deleted with the directory
                    }
                }
            }
            writer = null;
            reader = null;
        }
    }
}
