package io.llmprof.agent.kineto;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.io.JsonEOFException;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import io.llmprof.agent.sequence.LaneSequencer;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.LastBox;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Streaming reader of Kineto Chrome traces ({@code .json} or gzip, a bare array or {@code {"traceEvents":
 * [...]}}). A token walk, never a tree: memory is bounded by the reorder window, whatever the file size.
 *
 * <p>Yields {@code ph:"X"} events of categories {@code kernel}, {@code gpu_memcpy}, {@code gpu_memset}, {@code
 * gpu_user_annotation} (GPU lane) and {@code cuda_runtime}, {@code cuda_driver} (also what ROCm traces use),
 * {@code cpu_op}, {@code user_annotation} (HOST lane); everything else is counted as skipped. Times are exact
 * ns: µs numbers are parsed from their text, never through a double.
 *
 * <p>Rank: {@code distributedInfo.rank} when that object comes before {@code traceEvents} (one pass cannot go
 * back for one written after the events; such a trace falls through to the next rules), else the file name
 * ({@code TP-0}, {@code tp0}, {@code rank0}, {@code worker0}, {@code rank-3}), else {@code pid<N>} of the first
 * process with GPU activity seen before the first event has to leave the reorder window (else of the first
 * event with a numeric pid). GPU events of a second device get {@code <rank>.dev<D>}; host events always
 * belong to the file's rank.
 *
 * <p>Bad input never throws: a truncated file, invalid JSON, an event without {@code ts} or with a negative
 * {@code dur}, or a trace without kernels is logged, counted and reported as an {@link InputProblem};
 * everything readable is delivered, and every lane gets its {@code endOfTrace}. A bad event is skipped and
 * reading goes on; a syntax error or truncation ends the file (a streaming tokenizer cannot resynchronize
 * reliably inside broken JSON).
 */
public final class KinetoReader {
    /** File entries between two looks for quiet lanes ({@link ReaderOptions#releaseQuietLanes()}), at most. */
    static final int QUIET_CHECK_EVERY = 4096;

    private static final Logger LOG = LoggerFactory.getLogger(KinetoReader.class);

    private static final JsonFactory FACTORY = JsonFactory.builder()
            .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
            .build();

    /** Problems logged at WARN per file; the rest at DEBUG, with one summary line. */
    private static final int LOGGED_PROBLEMS_PER_FILE = 20;

    static final int SNIPPET_BYTES = 4096;
    private static final long PROGRESS_STEP_BYTES = 1 << 20;

    private KinetoReader() {}

    /**
     * Reads one trace file to the sink.
     *
     * @throws IOException only when the file cannot be opened at all (or the reading thread is interrupted:
     *     {@link InterruptedIOException}); bad content is reported through the summary and the sink
     */
    public static ReadSummary read(Path file, ReaderOptions options, OrderedSink sink) throws IOException {
        return read(file, options, sink, true);
    }

    /**
     * @param fastPath read with {@link FastTraceWalk} first; false: Jackson only (tests compare the two)
     */
    static ReadSummary read(Path file, ReaderOptions options, OrderedSink sink, boolean fastPath) throws IOException {
        Objects.requireNonNull(options, "options");
        Objects.requireNonNull(sink, "sink");
        if (options.interleaveLanes()) {
            throw new IllegalArgumentException("interleaved lanes are applied by TraceReaders.read");
        }
        long fileSize = Files.size(file);
        Replay replay = Replay.NONE;
        if (fastPath) {
            Session fast = new Session(file, fileSize, options, sink, Files.newInputStream(file), null);
            try (fast) {
                return fast.run();
            } catch (ByteScanner.Bail b) {
                // Both walks make the same calls for what the fast one read, so Jackson's read skips those.
                replay = fast.delivered();
                LOG.debug("{}: {} at byte {}; reading again with Jackson", file, b.getMessage(), fast.scanned());
            }
        }
        try (Session session = new Session(file, fileSize, options, sink, Files.newInputStream(file), replay)) {
            return session.run();
        }
    }

    /** True when the fast walk reads the whole file without handing it to Jackson (tests: it must, for real traces). */
    static boolean fastWalkReads(Path file) throws IOException {
        OrderedSink none = new OrderedSink() {
            @Override
            public void event(String rank, Lane lane, long index, TraceEvent event) {}

            @Override
            public void endOfTrace(String rank, Lane lane) {}
        };
        try (Session fast =
                new Session(file, Files.size(file), ReaderOptions.defaults(), none, Files.newInputStream(file), null)) {
            fast.run();
            return true;
        } catch (ByteScanner.Bail b) {
            return false;
        }
    }

    /**
     * What a fast read that gave up had already delivered: a Jackson read of the same file makes the same calls
     * first, and skips them (and their log lines), and does not report progress below what was reported.
     */
    private record Replay(long events, long problems, long progressBytes) {
        static final Replay NONE = new Replay(0, 0, 0);
    }

    /**
     * True when the file holds one complete document; false otherwise. A gzipped file is complete when its gzip stream
     * inflates to its end (its writer closed it) and what it holds ends with a closing brace or bracket: its JSON is
     * not parsed, since a whole trace is read right after anyway, and a complete gzip whose JSON is cut is then
     * reported as truncated. A plain file must end with one (checked on its last bytes first, so that a file still
     * being written is not parsed at every look) and parse to its end.
     */
    public static boolean isCompleteDocument(Path file) {
        try (CountingInputStream raw = new CountingInputStream(Files.newInputStream(file))) {
            InputStream in = maybeGunzip(raw);
            if (in instanceof GZIPInputStream) {
                return endsClosed(in);
            }
            if (!lastBytesClose(file)) {
                return false;
            }
            try (JsonParser p = FACTORY.createParser(in)) {
                if (p.nextToken() == null) {
                    return false;
                }
                p.skipChildren();
                return true;
            }
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** Reads {@code in} to its end: whether its last byte other than white space closes an object or array. */
    private static boolean endsClosed(InputStream in) throws IOException {
        byte[] buffer = new byte[1 << 16];
        int last = -1;
        for (int n; (n = in.read(buffer)) >= 0; ) {
            for (int i = n - 1; i >= 0; i--) {
                if (!isJsonSpace(buffer[i])) {
                    last = buffer[i];
                    break;
                }
            }
        }
        return last == '}' || last == ']';
    }

    /** Whether the plain file's last byte other than white space (within its last 64 KB) closes an object or array. */
    private static boolean lastBytesClose(Path file) throws IOException {
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(file)) {
            long size = ch.size();
            int n = (int) Math.min(size, 1 << 16);
            java.nio.ByteBuffer tail = java.nio.ByteBuffer.allocate(n);
            while (tail.hasRemaining() && ch.read(tail, size - n + tail.position()) >= 0) {
                // reads the last n bytes
            }
            for (int i = tail.position() - 1; i >= 0; i--) {
                byte b = tail.get(i);
                if (!isJsonSpace(b)) {
                    return b == '}' || b == ']';
                }
            }
            return false;
        }
    }

    private static boolean isJsonSpace(byte b) {
        return b == ' ' || b == '\n' || b == '\r' || b == '\t';
    }

    /** Whether the file starts with the gzip magic bytes (false when it cannot be read). */
    public static boolean isGzipped(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            return gzipMagic(in.read(), in.read());
        } catch (IOException e) {
            return false;
        }
    }

    /** Whether a file's first two bytes are gzip's magic number. */
    private static boolean gzipMagic(int b1, int b2) {
        return b1 == 0x1f && b2 == 0x8b;
    }

    /** The stream, gunzipped when it starts with the gzip magic bytes. */
    static InputStream maybeGunzip(InputStream raw) throws IOException {
        BufferedInputStream buffered = new BufferedInputStream(raw, 1 << 16);
        buffered.mark(2);
        int b1 = buffered.read();
        int b2 = buffered.read();
        buffered.reset();
        if (gzipMagic(b1, b2)) {
            return new GZIPInputStream(buffered, 1 << 16);
        }
        return buffered;
    }

    private static final int CAT_UNSEEN = EventFields.CAT_UNSEEN;
    private static final int CAT_OTHER = EventFields.CAT_OTHER;
    private static final int CAT_KERNEL = EventFields.CAT_KERNEL;
    private static final int CAT_MEMCPY = EventFields.CAT_MEMCPY;
    private static final int CAT_MEMSET = EventFields.CAT_MEMSET;
    private static final int CAT_RUNTIME = EventFields.CAT_RUNTIME;
    private static final int CAT_CPU_OP = EventFields.CAT_CPU_OP;
    private static final int CAT_USER_ANNOTATION = EventFields.CAT_USER_ANNOTATION;
    private static final int CAT_GPU_ANNOTATION = EventFields.CAT_GPU_ANNOTATION;

    private static final long MISSING = EventFields.MISSING;

    /** State of one read. */
    private static final class Session implements AutoCloseable, FastTraceWalk.Target {
        private final String fileLabel;
        private final long fileSize;
        private final ReaderOptions options;
        private final OrderedSink sink;
        private final CountingInputStream raw;
        private InputTracker tracker;
        private boolean gzip;
        private JsonParser p;

        private final StringCache names = new StringCache(8192);
        private final StringCache dims = new StringCache(4096);
        private final StringBuilder dimsText = new StringBuilder(128);

        // Rank identity.
        private String fileRank;
        private String fileRankSource;
        private boolean sawTraceEvents;
        private Long firstGpuPid;
        private Long firstPid;
        /** An event's stream (its thread or CUDA stream) boxed once per run of events on the same one. */
        private final LastBox streams = new LastBox();

        private String baseRank;
        private boolean primaryChosen;
        private Integer primaryDevice;
        private final Map<Integer, String> otherRanks = new TreeMap<>();
        private final Set<String> ranks = new HashSet<>();

        // Ordering.
        private LaneSequencer host;
        private LaneSequencer primaryGpu;
        private final Map<Integer, LaneSequencer> otherGpus = new TreeMap<>();
        private long nextQuietCheck;

        // Counts.
        private long eventsRead;
        private long kernels;
        private long skipped;
        private long entries;
        private long problemsTotal;
        private final List<InputProblem> problems = new ArrayList<>();
        private long lastProgress;

        private final Replay replay;
        private ByteScanner scanner;
        private final Path file;
        /** The second part tokenized on another thread (fast walk, splitRead); null: none. */
        private SplitAhead ahead;

        private long eventsDelivered;
        private long problemsDelivered;
        private long progressReported;

        /** Fields of the entry being read (reused: no per-event holder object). */
        private final EventFields ev = new EventFields();

        /** @param replay null: the fast walk; else Jackson, skipping what a fast read delivered */
        Session(Path file, long fileSize, ReaderOptions options, OrderedSink sink, InputStream in, Replay replay) {
            this.replay = replay;
            this.file = file;
            this.fileLabel = file.toString();
            this.fileSize = fileSize;
            this.options = options;
            this.sink = sink;
            this.raw = new CountingInputStream(in);
            TraceFiles.rankFromFileName(file.getFileName().toString()).ifPresent(r -> {
                fileRank = r;
                fileRankSource = "file name";
            });
        }

        ReadSummary run() throws IOException {
            boolean complete = false;
            try {
                InputStream decoded = maybeGunzip(raw);
                gzip = decoded instanceof GZIPInputStream;
                tracker = new InputTracker(decoded);
                if (replay == null) {
                    scanner = new ByteScanner(tracker);
                    if (options.splitRead()) {
                        ahead = SplitAhead.start(file, fileSize, gzip, options.inputDims());
                    }
                    complete = new FastTraceWalk(scanner, this, ahead, options.inputDims()).root();
                } else {
                    p = FACTORY.createParser(tracker);
                    complete = parseRoot();
                }
            } catch (ByteScanner.InterruptedRead e) {
                throw e.cause;
            } catch (InterruptedIOException e) {
                throw e;
            } catch (JsonEOFException e) {
                truncated(e, "the JSON text ends inside a value");
            } catch (EOFException e) {
                truncated(e, "the gzip stream ends early");
            } catch (StreamConstraintsException e) {
                invalid(e, "a JSON value exceeds the parser's limits");
            } catch (JsonProcessingException e) {
                invalid(e, "invalid JSON");
            } catch (ZipException e) {
                invalid(e, "corrupt gzip data");
            } catch (IOException e) {
                truncated(e, "read error");
            }
            finish();
            return new ReadSummary(
                    raw.count(),
                    eventsRead,
                    kernels,
                    skipped,
                    outOfOrder(),
                    problems,
                    ranks,
                    tracker == null ? 0 : tracker.total(),
                    problemsTotal,
                    complete);
        }

        @Override
        public void close() throws IOException {
            // A sorted lane's runs give their memory back, also when the read stopped early or is read again.
            if (host != null) {
                host.close();
            }
            if (primaryGpu != null) {
                primaryGpu.close();
            }
            otherGpus.values().forEach(LaneSequencer::close);
            if (ahead != null) {
                ahead.close();
            }
            if (p != null) {
                p.close();
            }
            raw.close();
        }

        // ---- structure

        private boolean parseRoot() throws IOException {
            JsonToken t = p.nextToken();
            if (t == null) {
                report(AnomalyKind.TRUNCATED_INPUT, 0, "the file is empty", "", null);
                return false;
            }
            if (t == JsonToken.START_ARRAY) {
                sawTraceEvents = true;
                readEvents();
                return true;
            }
            if (t != JsonToken.START_OBJECT) {
                report(
                        AnomalyKind.INVALID_JSON,
                        tokenOffset(),
                        "not a Chrome trace: expected '[' or '{' but found " + t,
                        around(tokenOffset()),
                        null);
                return false;
            }
            String field;
            while ((field = p.nextFieldName()) != null) {
                JsonToken value = p.nextToken();
                if ("traceEvents".equals(field) && value == JsonToken.START_ARRAY) {
                    sawTraceEvents = true;
                    readEvents();
                } else if ("distributedInfo".equals(field) && value == JsonToken.START_OBJECT) {
                    readDistributedInfo();
                } else {
                    p.skipChildren();
                }
            }
            if (p.currentToken() != JsonToken.END_OBJECT) {
                throw new JsonEOFException(p, null, "end of input inside the top-level object");
            }
            return true;
        }

        private void readDistributedInfo() throws IOException {
            String field;
            while ((field = p.nextFieldName()) != null) {
                JsonToken v = p.nextToken();
                if ("rank".equals(field) && (v == JsonToken.VALUE_NUMBER_INT || v == JsonToken.VALUE_STRING)) {
                    distributedRank(p.getText());
                } else {
                    p.skipChildren();
                }
            }
        }

        @Override
        public void distributedRank(String text) {
            String rank = text.trim();
            if (rank.isEmpty()) {
                return;
            }
            if (sawTraceEvents) {
                LOG.debug(
                        "{}: distributedInfo.rank {} comes after traceEvents; rank stays {}",
                        fileLabel,
                        rank,
                        baseRank);
            } else {
                fileRank = rank;
                fileRankSource = "distributedInfo";
            }
        }

        @Override
        public void traceEventsFound() {
            sawTraceEvents = true;
        }

        @Override
        public long entry() {
            return entries++;
        }

        @Override
        public void skippedEntry() {
            skipped++;
        }

        @Override
        public void checkpoint() throws InterruptedIOException {
            checkpointProgress();
        }

        private void readEvents() throws IOException {
            JsonToken t;
            while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                if (t == null) {
                    throw new JsonEOFException(p, null, "end of input inside traceEvents");
                }
                long ordinal = entries++;
                if (t == JsonToken.START_OBJECT) {
                    readEvent(ordinal);
                } else {
                    p.skipChildren();
                    skipped++;
                }
                if ((ordinal & 1023) == 0) {
                    checkpointProgress();
                }
            }
        }

        private void checkpointProgress() throws InterruptedIOException {
            if (Thread.currentThread().isInterrupted()) {
                throw new InterruptedIOException("interrupted while reading " + fileLabel);
            }
            long consumed = raw.count();
            if (consumed - lastProgress >= PROGRESS_STEP_BYTES) {
                lastProgress = consumed;
                progress(consumed);
            }
        }

        // ---- one event

        private void readEvent(long ordinal) throws IOException {
            EventFields f = ev;
            f.reset(tokenOffset());
            String field;
            while ((field = p.nextFieldName()) != null) {
                JsonToken v = p.nextToken();
                switch (field) {
                    case "ph" -> {
                        f.phSeen = true;
                        if (v != JsonToken.VALUE_STRING || !textIs("X")) {
                            skipRestOfObject();
                            skipped++;
                            return;
                        }
                    }
                    case "cat" -> {
                        f.cat = v == JsonToken.VALUE_STRING ? category() : CAT_OTHER;
                        if (f.cat == CAT_OTHER) {
                            skipRestOfObject();
                            skipped++;
                            return;
                        }
                    }
                    case "name" -> {
                        if (v == JsonToken.VALUE_STRING) {
                            f.name = names.get(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
                        } else {
                            p.skipChildren();
                        }
                    }
                    case "pid" -> {
                        long n = integerOrMissing(v);
                        if (n != MISSING) {
                            f.pid = n;
                            f.pidNumeric = true;
                        }
                    }
                    case "tid" -> {
                        long n = integerOrMissing(v);
                        if (n != MISSING) {
                            f.tid = n;
                            f.tidNumeric = true;
                        }
                    }
                    case "ts" -> f.ts = micros(v);
                    case "dur" -> f.dur = micros(v);
                    case "args" -> {
                        if (v == JsonToken.START_OBJECT) {
                            readArgs(options.inputDims() && (f.cat == CAT_CPU_OP || f.cat == CAT_UNSEEN));
                        } else {
                            p.skipChildren();
                        }
                    }
                    default -> p.skipChildren();
                }
            }
            event(f, ordinal);
        }

        /** One entry read by either walk: checked, turned into an event and sequenced (or counted). */
        @Override
        public void event(EventFields f, long ordinal) {
            if (options.releaseQuietLanes() && ordinal >= nextQuietCheck) {
                nextQuietCheck = ordinal + Math.max(1, Math.min(QUIET_CHECK_EVERY, options.reorderWindow() / 4));
                releaseQuietLanes(ordinal);
            }
            if (!f.phSeen || f.cat == CAT_UNSEEN) {
                skipped++;
                return;
            }
            long ts = f.ts;
            long dur = f.dur;
            String name = f.name;
            if (f.tsUnusable()) {
                badEvent(
                        AnomalyKind.MISSING_TS,
                        f,
                        (ts == MISSING ? "event without ts" : "event with an unreadable ts") + describe(name),
                        ordinal);
                return;
            }
            if (f.durUnusable()) {
                badEvent(
                        AnomalyKind.NEGATIVE_DURATION,
                        f,
                        (dur == Micros.INVALID
                                        ? "event with an unreadable dur"
                                        : "event with negative dur " + dur + " ns")
                                + describe(name),
                        ordinal);
                return;
            }
            if (dur == MISSING) {
                dur = 0;
            }
            if (name == null) {
                name = "";
            }
            boolean pidNumeric = f.pidNumeric;
            long pid = f.pid;
            Long stream = f.stream != MISSING ? streams.of(f.stream) : f.tidNumeric ? streams.of(f.tid) : null;
            Long externalId = EventFields.boxed(f.externalId);
            if (pidNumeric && firstPid == null) {
                firstPid = pid;
            }
            int cat = f.cat;
            switch (cat) {
                case CAT_KERNEL, CAT_MEMCPY, CAT_MEMSET, CAT_GPU_ANNOTATION -> {
                    Integer device = f.device != null ? f.device : pidNumeric ? Integer.valueOf((int) pid) : null;
                    Kind kind =
                            switch (cat) {
                                case CAT_KERNEL -> Kind.KERNEL;
                                case CAT_MEMCPY -> Kind.MEMCPY;
                                case CAT_MEMSET -> Kind.MEMSET;
                                default -> Kind.GPU_ANNOTATION;
                            };
                    Long correlation = kind == Kind.GPU_ANNOTATION ? null : EventFields.boxed(f.correlation);
                    TraceEvent e = new TraceEvent(kind, name, ts, dur, device, stream, correlation, externalId, null);
                    if (firstGpuPid == null) {
                        firstGpuPid = pidNumeric ? Long.valueOf(pid) : device == null ? null : Long.valueOf(device);
                    }
                    if (kind == Kind.KERNEL) {
                        kernels++;
                    }
                    eventsRead++;
                    gpuSequencer(device).offer(e, ordinal);
                }
                default -> {
                    Kind kind =
                            switch (cat) {
                                case CAT_RUNTIME -> Kind.RUNTIME;
                                case CAT_CPU_OP -> Kind.CPU_OP;
                                default -> Kind.USER_ANNOTATION;
                            };
                    TraceEvent e = new TraceEvent(
                            kind,
                            name,
                            ts,
                            dur,
                            null,
                            stream,
                            kind == Kind.RUNTIME ? EventFields.boxed(f.correlation) : null,
                            externalId,
                            kind == Kind.CPU_OP ? f.dims : null);
                    eventsRead++;
                    hostSequencer().offer(e, ordinal);
                }
            }
        }

        private void readArgs(boolean wantDims) throws IOException {
            String field;
            while ((field = p.nextFieldName()) != null) {
                JsonToken v = p.nextToken();
                switch (field) {
                    case "device" -> ev.device(integerOrMissing(v));
                    case "stream" -> ev.stream = integerOrMissing(v);
                    case "correlation" -> ev.correlation = integerOrMissing(v);
                    case "External id" -> ev.externalId = integerOrMissing(v);
                    case "Input Dims" -> {
                        if (wantDims) {
                            dimsText.setLength(0);
                            compactJson(v, dimsText);
                            ev.dims = dims.get(dimsText);
                        } else {
                            p.skipChildren();
                        }
                    }
                    default -> p.skipChildren();
                }
            }
        }

        /** A JSON integer, or a string holding one (string pids such as "Spans" are not). */
        private long integerOrMissing(JsonToken v) throws IOException {
            if (v == JsonToken.VALUE_NUMBER_INT) {
                if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                    return MISSING;
                }
                return p.getLongValue();
            }
            if (v == JsonToken.VALUE_STRING) {
                char[] buf = p.getTextCharacters();
                int off = p.getTextOffset();
                int len = p.getTextLength();
                if (len == 0 || len > 18) {
                    return MISSING;
                }
                long n = 0;
                int i = 0;
                boolean neg = buf[off] == '-';
                if (neg) {
                    i = 1;
                    if (len == 1) {
                        return MISSING;
                    }
                }
                for (; i < len; i++) {
                    char c = buf[off + i];
                    if (c < '0' || c > '9') {
                        return MISSING;
                    }
                    n = n * 10 + (c - '0');
                }
                return neg ? -n : n;
            }
            p.skipChildren();
            return MISSING;
        }

        private long micros(JsonToken v) throws IOException {
            if (v == JsonToken.VALUE_NUMBER_INT) {
                if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                    return Micros.INVALID;
                }
                return Micros.fromIntegerMicros(p.getLongValue());
            }
            if (v == JsonToken.VALUE_NUMBER_FLOAT || v == JsonToken.VALUE_STRING) {
                return Micros.parse(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
            }
            if (v == JsonToken.VALUE_NULL) {
                return MISSING;
            }
            p.skipChildren();
            return Micros.INVALID;
        }

        private void compactJson(JsonToken t, StringBuilder out) throws IOException {
            switch (t) {
                case START_ARRAY -> {
                    out.append('[');
                    boolean first = true;
                    JsonToken c;
                    while ((c = p.nextToken()) != JsonToken.END_ARRAY) {
                        if (c == null) {
                            throw new JsonEOFException(p, null, "end of input inside Input Dims");
                        }
                        if (!first) {
                            out.append(',');
                        }
                        first = false;
                        compactJson(c, out);
                    }
                    out.append(']');
                }
                case START_OBJECT -> {
                    out.append('{');
                    boolean first = true;
                    String f;
                    while ((f = p.nextFieldName()) != null) {
                        if (!first) {
                            out.append(',');
                        }
                        first = false;
                        out.append('"');
                        JsonStringEncoder.getInstance().quoteAsString(f, out);
                        out.append("\":");
                        compactJson(p.nextToken(), out);
                    }
                    out.append('}');
                }
                case VALUE_STRING -> {
                    out.append('"');
                    JsonStringEncoder.getInstance().quoteAsString(p.getText(), out);
                    out.append('"');
                }
                default -> out.append(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
            }
        }

        private void skipRestOfObject() throws IOException {
            JsonToken t;
            while ((t = p.nextToken()) != JsonToken.END_OBJECT) {
                if (t == null) {
                    throw new JsonEOFException(p, null, "end of input inside an event");
                }
                if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) {
                    p.skipChildren();
                }
            }
        }

        private boolean textIs(String s) throws IOException {
            return equalsText(s);
        }

        private boolean equalsText(String s) throws IOException {
            int len = p.getTextLength();
            if (len != s.length()) {
                return false;
            }
            char[] buf = p.getTextCharacters();
            int off = p.getTextOffset();
            for (int i = 0; i < len; i++) {
                if (buf[off + i] != s.charAt(i)) {
                    return false;
                }
            }
            return true;
        }

        private int category() throws IOException {
            switch (p.getTextLength()) {
                case 6:
                    return equalsText("kernel") ? CAT_KERNEL : equalsText("cpu_op") ? CAT_CPU_OP : CAT_OTHER;
                case 10:
                    return equalsText("gpu_memcpy") ? CAT_MEMCPY : equalsText("gpu_memset") ? CAT_MEMSET : CAT_OTHER;
                case 11:
                    return equalsText("cuda_driver") ? CAT_RUNTIME : CAT_OTHER;
                case 12:
                    return equalsText("cuda_runtime") ? CAT_RUNTIME : CAT_OTHER;
                case 15:
                    return equalsText("user_annotation") ? CAT_USER_ANNOTATION : CAT_OTHER;
                case 19:
                    return equalsText("gpu_user_annotation") ? CAT_GPU_ANNOTATION : CAT_OTHER;
                default:
                    return CAT_OTHER;
            }
        }

        // ---- ordering and rank identity

        /** Lets out what a lane holds once the file has gone a reorder window past its last event. */
        private void releaseQuietLanes(long ordinal) {
            releaseIfQuiet(host, ordinal);
            releaseIfQuiet(primaryGpu, ordinal);
            for (LaneSequencer other : otherGpus.values()) {
                releaseIfQuiet(other, ordinal);
            }
        }

        private void releaseIfQuiet(LaneSequencer lane, long ordinal) {
            if (lane != null && lane.buffered() > 0 && ordinal - lane.lastOrdinal() >= options.reorderWindow()) {
                lane.release();
            }
        }

        private LaneSequencer hostSequencer() {
            if (host == null) {
                host = new LaneSequencer(
                                options.reorderWindow(),
                                options.spillDir(),
                                (index, e) -> deliver(baseRank(), Lane.HOST, index, e))
                        .abortOnLate(options.abortOnLate());
            }
            return host;
        }

        private LaneSequencer gpuSequencer(Integer device) {
            if (!primaryChosen) {
                primaryChosen = true;
                primaryDevice = device;
            }
            if (device == null || device.equals(primaryDevice)) {
                if (primaryGpu == null) {
                    primaryGpu = new LaneSequencer(
                                    options.reorderWindow(),
                                    options.spillDir(),
                                    (index, e) -> deliver(baseRank(), Lane.GPU, index, e))
                            .abortOnLate(options.abortOnLate());
                }
                return primaryGpu;
            }
            return otherGpus.computeIfAbsent(device, d -> new LaneSequencer(
                            options.reorderWindow(),
                            options.spillDir(),
                            (index, e) -> deliver(deviceRank(d), Lane.GPU, index, e))
                    .abortOnLate(options.abortOnLate()));
        }

        private String baseRank() {
            if (baseRank == null) {
                if (fileRank != null) {
                    baseRank = fileRank;
                } else if (firstGpuPid != null) {
                    baseRank = "pid" + firstGpuPid;
                    fileRankSource = "pid of the first GPU activity";
                } else if (firstPid != null) {
                    baseRank = "pid" + firstPid;
                    fileRankSource = "pid of the first event";
                } else {
                    baseRank = "unknown";
                    fileRankSource = "nothing in the file";
                }
                ranks.add(baseRank);
                LOG.debug("{}: rank {} from {}", fileLabel, baseRank, fileRankSource);
            }
            return baseRank;
        }

        private String deviceRank(int device) {
            return otherRanks.computeIfAbsent(device, d -> {
                String r = baseRank() + ".dev" + d;
                ranks.add(r);
                return r;
            });
        }

        private void finish() {
            String rank = baseRank();
            if (options.spillDir() != null) {
                // sorted on disk: every lane still waits for the end; let them out interleaved by time
                List<LaneSequencer> lanes = new ArrayList<>();
                if (host != null) {
                    lanes.add(host);
                }
                if (primaryGpu != null) {
                    lanes.add(primaryGpu);
                }
                lanes.addAll(otherGpus.values());
                LaneSequencer.finishTogether(lanes);
            }
            if (host != null) {
                host.finish();
            }
            sink.endOfTrace(rank, Lane.HOST);
            if (primaryGpu != null) {
                primaryGpu.finish();
            }
            sink.endOfTrace(rank, Lane.GPU);
            for (Map.Entry<Integer, LaneSequencer> other : otherGpus.entrySet()) {
                other.getValue().finish();
                sink.endOfTrace(deviceRank(other.getKey()), Lane.GPU);
            }
            long position = tracker == null ? 0 : tracker.total();
            long late = outOfOrder();
            if (late > 0) {
                report(
                        AnomalyKind.OUT_OF_ORDER,
                        position,
                        late + " events started earlier than an event already emitted for their (rank, lane);"
                                + " sent late (reorder window " + options.reorderWindow() + " events per lane): kernel"
                                + " categories and host figures that need their order may differ from llmprof analyze"
                                + " of the file; exact order (the default: without --no-exact-order or --host-first)"
                                + " keeps them exact, as does --reorder-window "
                                + Math.max(entries, options.reorderWindow() + 1L) + " (its " + entries + " entries)",
                        "",
                        null);
            }
            if (kernels == 0) {
                report(
                        AnomalyKind.NO_KERNELS,
                        position,
                        sawTraceEvents
                                ? "no kernel events among " + entries + " trace entries"
                                : "no traceEvents: not a Chrome trace",
                        "",
                        null);
            }
            if (problemsTotal > LOGGED_PROBLEMS_PER_FILE) {
                LOG.warn(
                        "{}: {} input problems in all, {} more than logged above",
                        fileLabel,
                        problemsTotal,
                        problemsTotal - LOGGED_PROBLEMS_PER_FILE);
            }
            long end = Math.max(raw.count(), replay == null ? 0 : replay.progressBytes());
            progressReported = end;
            options.progress().inputBytes(end);
        }

        private long outOfOrder() {
            long n = host == null ? 0 : host.outOfOrder();
            n += primaryGpu == null ? 0 : primaryGpu.outOfOrder();
            for (LaneSequencer s : otherGpus.values()) {
                n += s.outOfOrder();
            }
            return n;
        }

        // ---- problems

        private void progress(long consumed) {
            if (replay != null && consumed <= replay.progressBytes()) {
                return; // the fast read reported this far already
            }
            progressReported = consumed;
            options.progress().inputBytes(consumed);
        }

        /** What this (fast) session has delivered so far. */
        Replay delivered() {
            return new Replay(eventsDelivered, problemsDelivered, progressReported);
        }

        /** Where the fast walk stopped. */
        long scanned() {
            return scanner == null ? 0 : scanner.position();
        }

        private void deliver(String rank, Lane lane, long index, TraceEvent e) {
            if (replay != null && eventsDelivered < replay.events()) {
                eventsDelivered++;
                return;
            }
            eventsDelivered++;
            sink.event(rank, lane, index, e);
        }

        private void badEvent(AnomalyKind kind, EventFields f, String message, long ordinal) {
            String snippet;
            long compressedRead = raw.count();
            if (f.end >= 0) {
                // read by the second part's thread, which kept the bytes of such an entry and how far it had read
                snippet = f.snippet == null ? "" : f.snippet;
                compressedRead = f.rawRead;
            } else {
                long eventEnd = scanner != null
                        ? scanner.position()
                        : p.currentLocation().getByteOffset();
                snippet = tracker.snippet(f.start, eventEnd, SNIPPET_BYTES);
            }
            report(kind, f.start, compressedRead, message + " (traceEvents[" + ordinal + "])", snippet, null);
        }

        private void truncated(IOException e, String what) {
            long position = tracker == null ? 0 : tracker.total();
            if (e instanceof JsonProcessingException jpe && jpe.getLocation() != null) {
                position = Math.max(position, jpe.getLocation().getByteOffset());
            }
            report(
                    AnomalyKind.TRUNCATED_INPUT,
                    position,
                    what + ": " + firstLine(e),
                    around(position),
                    e.getClass().getName());
        }

        private void invalid(IOException e, String what) {
            long position = tracker == null ? 0 : tracker.total();
            if (e instanceof JsonProcessingException jpe) {
                JsonLocation loc = jpe.getLocation();
                if (loc != null && loc.getByteOffset() >= 0) {
                    position = loc.getByteOffset();
                }
            }
            report(
                    AnomalyKind.INVALID_JSON,
                    position,
                    what + ": " + firstLine(e),
                    around(position),
                    e.getClass().getName());
        }

        private String around(long position) {
            return tracker == null ? "" : tracker.snippet(position - 256, position + 256, 512);
        }

        private long tokenOffset() {
            JsonLocation loc = p.currentTokenLocation();
            return loc == null ? -1 : loc.getByteOffset();
        }

        private void report(AnomalyKind kind, long position, String message, String snippet, String exception) {
            report(kind, position, raw.count(), message, snippet, exception);
        }

        /** @param compressedRead gzip: compressed bytes read by then, read-ahead included (the message's "~") */
        private void report(
                AnomalyKind kind,
                long position,
                long compressedRead,
                String message,
                String snippet,
                String exception) {
            String where = gzip
                    ? message + " [decompressed byte " + position + "; compressed byte ~" + compressedRead + " of "
                            + fileSize + " (read-ahead included)]"
                    : message + " [byte " + position + " of " + fileSize + "]";
            InputProblem problem = new InputProblem(kind, fileLabel, position, where, snippet, exception);
            problemsTotal++;
            if (problems.size() < options.maxProblemsKept()) {
                problems.add(problem);
            }
            if (replay != null && problemsDelivered < replay.problems()) {
                problemsDelivered++; // the fast read logged and delivered it
                return;
            }
            problemsDelivered++;
            if (problemsTotal <= LOGGED_PROBLEMS_PER_FILE) {
                LOG.warn("{}:{}: {}: {}", fileLabel, position, kind, where);
            } else {
                LOG.debug("{}:{}: {}: {}", fileLabel, position, kind, where);
            }
            sink.problem(problem);
        }

        private static String describe(String name) {
            return name == null ? "" : " (" + (name.length() > 120 ? name.substring(0, 120) + "..." : name) + ")";
        }

        private static String firstLine(Throwable e) {
            String m = e.getMessage();
            if (m == null) {
                return e.getClass().getSimpleName();
            }
            int nl = m.indexOf('\n');
            return nl < 0 ? m : m.substring(0, nl);
        }
    }
}
