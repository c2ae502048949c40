package io.llmprof.agent.kineto;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.SequenceInputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The second part of a large Kineto file, tokenized ahead on a second thread while the reading thread goes
 * through the first ({@link ReaderOptions#splitRead}).
 *
 * <p>It starts at the first byte after {@link #SPLIT_AT} of the file that looks like the start of a {@code traceEvents}
 * entry ({@code }, {}), and walks entries from there with the same {@link FastTraceWalk} the reading thread uses,
 * recording for each entry what the walk reported (its fields, or that it was skipped) and where it ended. Nothing
 * it records is used unless the reading thread's own walk arrives at exactly that byte as the start of an entry
 * of {@code traceEvents}: then both walks would read the same bytes from the same state, and the reading thread
 * takes the records instead of tokenizing those bytes again (same calls, same order: the session that turns
 * fields into events, rank by rank, stays on the reading thread). Anywhere else (a guess inside a string or a
 * nested object, an array that ends before the split point), the records are dropped and the reading thread reads on
 * alone. Where this walk stops early (anything the fast walk does not read, which the reading thread then reads
 * itself, or a failure), the records up to its last whole entry stand, and the reading thread goes on from
 * there.
 *
 * <p>A gzipped file is split in its inflated bytes: this thread inflates the stream itself up to the split point
 * (from the size in the gzip trailer, a hint only), so both threads inflate that much. The session quotes a bad
 * entry's bytes from its reader's ring, which never sees the entries read here: for an entry the session will
 * report ({@link EventFields#unusable}), this thread keeps the bytes and how far it had read the file.
 *
 * <p>Memory is bounded: at most {@value #MAX_QUEUED} chunks of {@value #CHUNK} entries (about 30 MB) are queued;
 * beyond that this thread waits for the reading thread to take them.
 */
final class SplitAhead implements AutoCloseable {
    /** Smaller files are read on one thread: the second thread's start costs more than it saves. */
    static final long MIN_FILE_BYTES = 8L << 20;

    /**
     * Larger gzipped files are read on one thread: this thread inflates everything up to the split point a second
     * time, while its lead over the reading thread stays bounded by the queue (2.16 GB inflated: 20.9 s against
     * 20.1 s on one thread; 632 MB: 6.5-6.8 s against 7.7-9.4 s).
     */
    static final long MAX_GZIP_INFLATED_BYTES = 1L << 30;

    /**
     * Where the second thread starts, as a fraction of the file: before the middle, since the reading thread also
     * turns every entry of both parts into events, and a host-first file's first part (cpu_ops with their Input
     * Dims) costs more per byte than its kernels (140 MB synth trace: 0.42 gave 0.95x the wall time of 0.5).
     */
    static final double SPLIT_AT = 0.42;

    /** Entries the reading threads took from this thread instead of tokenizing them (all files): a diagnostic. */
    static final LongAdder TAKEN_OVER = new LongAdder();

    static final int CHUNK = 4096;
    static final int MAX_QUEUED = 64;
    /** Bytes searched after the split point for an entry start. */
    private static final int PROBE = 1 << 20;

    /** How the records end: what the reading thread does after the last one. */
    static final int AT_ENTRY = 0;
    /** Right after an entry: the next byte is ',' or ']' (or what the walk makes of it). */
    static final int AFTER_ENTRY = 1;
    /** The {@code traceEvents} array closed. */
    static final int AFTER_ARRAY = 2;

    /**
     * Offset of the entry this thread starts at, once {@link #decided} ({@link Long#MAX_VALUE}: none). It looks on
     * its own thread (a gzipped file is inflated up to there first).
     */
    private volatile long offset = Long.MAX_VALUE;

    /** Counted down once this thread has found its start, or given up. */
    private final CountDownLatch decided = new CountDownLatch(1);

    /**
     * Where the split point lies in the file (plain) or in the inflated stream (gzip): the start is the first entry
     * start at or after it. The reading thread waits there for this thread's decision, so it never passes the start
     * while this thread is still looking for it (a busy machine, a slow inflate): whether the second part is taken
     * over does not depend on timing.
     */
    final long target;

    private final boolean gzip;
    /** As the reading thread's walk: cpu_ops' Input Dims read, else skipped. */
    private final boolean inputDims;

    private static final Logger LOG = LoggerFactory.getLogger(SplitAhead.class);

    private final Path file;
    /** Entries the reading thread took over from this one (read by the reading thread only). */
    private long taken;

    private boolean closed;
    private final BlockingQueue<Chunk> queue = new ArrayBlockingQueue<>(MAX_QUEUED);
    private final Thread thread;
    private volatile boolean cancelled;

    /** One run of entries, as parallel arrays (no holder object per entry). */
    static final class Chunk {
        final boolean[] event = new boolean[CHUNK];
        final long[] start = new long[CHUNK];
        final long[] end = new long[CHUNK];
        final boolean[] phSeen = new boolean[CHUNK];
        final byte[] cat = new byte[CHUNK];
        final String[] name = new String[CHUNK];
        final long[] pid = new long[CHUNK];
        final boolean[] pidNumeric = new boolean[CHUNK];
        final long[] tid = new long[CHUNK];
        final boolean[] tidNumeric = new boolean[CHUNK];
        final long[] ts = new long[CHUNK];
        final long[] dur = new long[CHUNK];
        final Integer[] device = new Integer[CHUNK];
        final long[] stream = new long[CHUNK];
        final long[] correlation = new long[CHUNK];
        final long[] externalId = new long[CHUNK];
        final String[] dims = new String[CHUNK];
        /** The entry's bytes, kept only where the session will report it ({@link EventFields#unusable}). */
        final String[] snippet = new String[CHUNK];
        /** The file's bytes this thread had read when it kept a snippet (gzip: compressed, read-ahead included). */
        final long[] rawRead = new long[CHUNK];

        int size;

        /** Set on the last chunk: how the records end, and where. */
        boolean last;

        int endState;
        long endPosition;

        /** Entry i's fields into {@code f}, as the walk had them. */
        void fields(int i, EventFields f) {
            f.reset(start[i]);
            f.end = end[i];
            f.phSeen = phSeen[i];
            f.cat = cat[i];
            f.name = name[i];
            f.pid = pid[i];
            f.pidNumeric = pidNumeric[i];
            f.tid = tid[i];
            f.tidNumeric = tidNumeric[i];
            f.ts = ts[i];
            f.dur = dur[i];
            f.device = device[i];
            f.stream = stream[i];
            f.correlation = correlation[i];
            f.externalId = externalId[i];
            f.dims = dims[i];
            f.snippet = snippet[i];
            f.rawRead = rawRead[i];
        }
    }

    private SplitAhead(Path file, long target, boolean gzip, boolean inputDims) {
        this.file = file;
        this.target = target;
        this.gzip = gzip;
        this.inputDims = inputDims;
        this.thread = new Thread(this::run, "kineto-split-ahead");
        thread.setDaemon(true);
    }

    /**
     * Starts tokenizing the second part of {@code file} ({@code size} bytes; {@code gzip}: the reading thread found
     * the gzip magic bytes); null when the file, or a gzipped file's inflated size as its trailer gives it, is not
     * {@link #worthSplitting}. {@code inputDims}: as the reading thread's walk ({@link ReaderOptions#inputDims()}).
     */
    static SplitAhead start(Path file, long size, boolean gzip, boolean inputDims) {
        long length = gzip ? inflatedSizeHint(file, size) : size;
        if (!worthSplitting(length, gzip)) {
            return null;
        }
        SplitAhead ahead = new SplitAhead(file, (long) (length * SPLIT_AT), gzip, inputDims);
        ahead.thread.start();
        return ahead;
    }

    /** Whether a file of {@code length} bytes (gzip: inflated, as the trailer says) is read on two threads. */
    static boolean worthSplitting(long length, boolean gzip) {
        return length >= MIN_FILE_BYTES && (!gzip || length <= MAX_GZIP_INFLATED_BYTES);
    }

    /**
     * A gzip file's inflated size as its last member's trailer gives it (ISIZE, modulo 4 GiB): only where the split
     * point goes, so a wrong value (several members, over 4 GiB) costs balance, never correctness; -1 if unreadable.
     */
    static long inflatedSizeHint(Path file, long size) {
        if (size < 18) {
            return -1;
        }
        ByteBuffer b = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel ch = FileChannel.open(file)) {
            while (b.hasRemaining() && ch.read(b, size - 4 + b.position()) > 0) {
                // the last four bytes
            }
        } catch (IOException e) {
            return -1;
        }
        return b.hasRemaining() ? -1 : Integer.toUnsignedLong(b.getInt(0));
    }

    /**
     * Offset of the entry this thread starts at, waiting until it has decided; {@link Long#MAX_VALUE}: none.
     *
     * @throws InterruptedIOException when the reading thread is interrupted
     */
    long awaitOffset() throws InterruptedIOException {
        try {
            while (!decided.await(100, TimeUnit.MILLISECONDS)) {
                if (!thread.isAlive()) {
                    return Long.MAX_VALUE; // cannot happen (counted down in a finally); never wait for nothing
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for the second part's start in " + file);
        }
        return offset;
    }

    /** The index of the first '{' in {@code a[0, n)} that follows '}' and ',' (whitespace between); -1: none. */
    static int entryStart(byte[] a, int n) {
        int state = 0; // 0: looking for '}', 1: '}' seen, 2: '}' ',' seen
        for (int i = 0; i < n; i++) {
            byte c = a[i];
            boolean space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
            if (space) {
                continue;
            }
            if (c == '}') {
                state = 1;
            } else if (c == ',' && state == 1) {
                state = 2;
            } else if (c == '{' && state == 2) {
                return i;
            } else {
                state = 0;
            }
        }
        return -1;
    }

    /**
     * The next chunk of records, waiting for it; the last one has {@link Chunk#last} set.
     *
     * @throws InterruptedIOException when the reading thread is interrupted
     */
    Chunk take() throws InterruptedIOException {
        try {
            while (true) {
                Chunk c = queue.poll(100, TimeUnit.MILLISECONDS);
                if (c != null) {
                    return c;
                }
                if (!thread.isAlive() && queue.isEmpty()) {
                    // only if queueing the last chunk itself failed (out of memory): never wait for nothing; the
                    // reader then reads the file again with Jackson, skipping what it delivered
                    throw new ByteScanner.Bail("the second part's thread ended without its last records");
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while taking the second part of " + file);
        }
    }

    /** Counts entries the reading thread took over (a diagnostic: {@link #TAKEN_OVER}, and the debug log). */
    void taken(int entries) {
        taken += entries;
        TAKEN_OVER.add(entries);
    }

    /** Stops the thread and drops what it queued. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            long at = offset;
            if (decided.getCount() > 0 || at == Long.MAX_VALUE) {
                LOG.debug("{}: the second thread found no entry start after byte {}", file, target);
            } else {
                LOG.debug(
                        "{}: second thread from {}byte {}: {} entries taken over{}",
                        file,
                        gzip ? "inflated " : "",
                        at,
                        taken,
                        taken == 0 ? " (the reading walk did not start an entry there, or it stopped at once)" : "");
            }
        }
        cancelled = true;
        queue.clear();
        thread.interrupt();
    }

    private void run() {
        Collector out = new Collector();
        long at = -1;
        try (CountingInputStream raw = new CountingInputStream(Files.newInputStream(file))) {
            out.raw = raw;
            ByteScanner s;
            try {
                InputStream in = gzip ? KinetoReader.maybeGunzip(raw) : raw;
                in.skipNBytes(target); // a plain file's channel seeks; a gzip stream inflates up to there
                byte[] probe = in.readNBytes(PROBE);
                int i = entryStart(probe, probe.length);
                if (i < 0 || cancelled) {
                    return; // no split: the reading thread reads it all
                }
                at = target + i;
                InputTracker tracker = new InputTracker(
                        new SequenceInputStream(new ByteArrayInputStream(probe, i, probe.length - i), in), at);
                s = new ByteScanner(tracker, at);
                out.scanner = s;
                out.tracker = tracker;
                offset = at;
            } finally {
                decided.countDown(); // with an offset, or none: the reading thread goes on
            }
            boolean arrayClosed = new FastTraceWalk(s, out, inputDims).entries();
            if (arrayClosed) {
                out.finish(AFTER_ARRAY, s.position());
                return;
            }
        } catch (Throwable t) {
            // Bail (something the fast walk does not read), cancelled, a read or inflate error, the stream ending
            // before the split point, or worse: the records so far stand, and the reading thread reads on from the
            // last whole entry
        }
        if (at < 0) {
            return; // failed before it had an offset: the reading thread never takes anything
        }
        if (out.entries == 0) {
            out.finish(AT_ENTRY, at);
        } else {
            out.finish(AFTER_ENTRY, out.lastEnd);
        }
    }

    /** Records what the walk reports, entry by entry, into chunks. */
    private final class Collector implements FastTraceWalk.Target {
        ByteScanner scanner;
        InputTracker tracker;
        CountingInputStream raw;
        Chunk chunk = new Chunk();
        long entries;
        long lastEnd;
        boolean finished;

        @Override
        public void distributedRank(String rank) {
            throw new ByteScanner.Bail("distributedInfo inside traceEvents");
        }

        @Override
        public void traceEventsFound() {
            throw new ByteScanner.Bail("traceEvents inside traceEvents");
        }

        @Override
        public long entry() {
            return entries;
        }

        @Override
        public void skippedEntry() {
            Chunk c = chunk;
            int i = c.size;
            c.event[i] = false;
            c.end[i] = scanner.position();
            commit();
        }

        @Override
        public void checkpoint() throws InterruptedIOException {
            if (cancelled) {
                throw new InterruptedIOException("cancelled");
            }
        }

        @Override
        public void event(EventFields f, long ordinal) {
            Chunk c = chunk;
            int i = c.size;
            c.event[i] = true;
            c.start[i] = f.start;
            c.end[i] = scanner.position();
            c.phSeen[i] = f.phSeen;
            c.cat[i] = (byte) f.cat;
            c.name[i] = f.name;
            c.pid[i] = f.pid;
            c.pidNumeric[i] = f.pidNumeric;
            c.tid[i] = f.tid;
            c.tidNumeric[i] = f.tidNumeric;
            c.ts[i] = f.ts;
            c.dur[i] = f.dur;
            c.device[i] = f.device;
            c.stream[i] = f.stream;
            c.correlation[i] = f.correlation;
            c.externalId[i] = f.externalId;
            c.dims[i] = f.dims;
            if (f.unusable()) {
                c.snippet[i] = tracker.snippet(f.start, c.end[i], KinetoReader.SNIPPET_BYTES);
                c.rawRead[i] = raw.count();
            } else {
                c.snippet[i] = null;
                c.rawRead[i] = -1;
            }
            commit();
        }

        private void commit() {
            lastEnd = chunk.end[chunk.size];
            chunk.size++;
            entries++;
            if (chunk.size == CHUNK) {
                Chunk full = chunk;
                chunk = new Chunk();
                if (!put(full)) {
                    throw new ByteScanner.Bail("cancelled");
                }
            }
        }

        void finish(int state, long position) {
            if (finished) {
                return;
            }
            finished = true;
            chunk.last = true;
            chunk.endState = state;
            chunk.endPosition = position;
            put(chunk);
        }

        /** Queues a chunk, waiting while the queue is full; false when cancelled (nobody takes it). */
        private boolean put(Chunk c) {
            try {
                while (!cancelled) {
                    if (queue.offer(c, 100, TimeUnit.MILLISECONDS)) {
                        return true;
                    }
                    // the reading thread has not caught up: wait (bounded memory)
                }
            } catch (InterruptedException e) {
                cancelled = true; // close() interrupts: nobody takes these any more
            }
            return false;
        }
    }
}
