package io.llmprof.agent.kineto;

import static io.llmprof.agent.kineto.EventFields.CAT_CPU_OP;
import static io.llmprof.agent.kineto.EventFields.CAT_GPU_ANNOTATION;
import static io.llmprof.agent.kineto.EventFields.CAT_KERNEL;
import static io.llmprof.agent.kineto.EventFields.CAT_MEMCPY;
import static io.llmprof.agent.kineto.EventFields.CAT_MEMSET;
import static io.llmprof.agent.kineto.EventFields.CAT_OTHER;
import static io.llmprof.agent.kineto.EventFields.CAT_RUNTIME;
import static io.llmprof.agent.kineto.EventFields.CAT_UNSEEN;
import static io.llmprof.agent.kineto.EventFields.CAT_USER_ANNOTATION;
import static io.llmprof.agent.kineto.EventFields.MISSING;

import io.llmprof.agent.kineto.ByteScanner.Bail;
import java.io.InterruptedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The fast token walk of a Kineto trace, over {@link ByteScanner}: the same structure, fields and rules as
 * KinetoReader's Jackson walk (method for method: root, distributedInfo, traceEvents, one entry, args, Input
 * Dims), but on raw bytes, with no token objects and no decoding. What it cannot read exactly as Jackson would
 * throws {@link Bail}.
 */
final class FastTraceWalk {
    /** What the walk reports to: the reader's session. */
    interface Target {
        /** {@code distributedInfo.rank} as Jackson's text of the value (not yet trimmed). */
        void distributedRank(String rank);

        void traceEventsFound();

        /** The next entry's ordinal. */
        long entry();

        void skippedEntry();

        /** Called after every 1024th entry: interruption and progress. */
        void checkpoint() throws InterruptedIOException;

        void event(EventFields fields, long ordinal);
    }

    private static final int F_OTHER = 0;
    private static final int F_PH = 1;
    private static final int F_CAT = 2;
    private static final int F_NAME = 3;
    private static final int F_PID = 4;
    private static final int F_TID = 5;
    private static final int F_TS = 6;
    private static final int F_DUR = 7;
    private static final int F_ARGS = 8;
    private static final int A_DEVICE = 9;
    private static final int A_STREAM = 10;
    private static final int A_CORRELATION = 11;
    private static final int A_EXTERNAL_ID = 12;
    private static final int A_INPUT_DIMS = 13;

    private static final int MAX_DIMS_DEPTH = 200;

    private static final byte[] W_EXTERNAL_ID = ByteScanner.ascii("External id");
    private static final byte[] W_INPUT_DIMS = ByteScanner.ascii("Input Dims");
    private static final byte[] W_X = ByteScanner.ascii("X");
    private static final byte[] W_ARGS = ByteScanner.ascii("args");
    private static final byte[] W_CAT = ByteScanner.ascii("cat");
    private static final byte[] W_CORRELATION = ByteScanner.ascii("correlation");
    private static final byte[] W_CPU_OP = ByteScanner.ascii("cpu_op");
    private static final byte[] W_CUDA_DRIVER = ByteScanner.ascii("cuda_driver");
    private static final byte[] W_CUDA_RUNTIME = ByteScanner.ascii("cuda_runtime");
    private static final byte[] W_DEVICE = ByteScanner.ascii("device");
    private static final byte[] W_DISTRIBUTEDINFO = ByteScanner.ascii("distributedInfo");
    private static final byte[] W_DUR = ByteScanner.ascii("dur");
    private static final byte[] W_GPU_MEMCPY = ByteScanner.ascii("gpu_memcpy");
    private static final byte[] W_GPU_MEMSET = ByteScanner.ascii("gpu_memset");
    private static final byte[] W_GPU_USER_ANNOTATION = ByteScanner.ascii("gpu_user_annotation");
    private static final byte[] W_KERNEL = ByteScanner.ascii("kernel");
    private static final byte[] W_NAME = ByteScanner.ascii("name");
    private static final byte[] W_PH = ByteScanner.ascii("ph");
    private static final byte[] W_PID = ByteScanner.ascii("pid");
    private static final byte[] W_RANK = ByteScanner.ascii("rank");
    private static final byte[] W_STREAM = ByteScanner.ascii("stream");
    private static final byte[] W_TID = ByteScanner.ascii("tid");
    private static final byte[] W_TRACEEVENTS = ByteScanner.ascii("traceEvents");
    private static final byte[] W_TS = ByteScanner.ascii("ts");
    private static final byte[] W_USER_ANNOTATION = ByteScanner.ascii("user_annotation");

    private final ByteScanner s;
    private final Target target;
    private final StringCache names = new StringCache(8192);
    private final StringCache dims = new StringCache(4096);
    private final EventFields f = new EventFields();
    private char[] text = new char[256];
    private int textLen;

    /** The second part tokenized on another thread, until this walk reaches its first entry; else null. */
    private SplitAhead ahead;

    /** cpu_ops' Input Dims are read ({@link ReaderOptions#inputDims()}), else skipped. */
    private final boolean inputDims;

    FastTraceWalk(ByteScanner scanner, Target target, boolean inputDims) {
        this(scanner, target, null, inputDims);
    }

    FastTraceWalk(ByteScanner scanner, Target target, SplitAhead ahead, boolean inputDims) {
        this.s = scanner;
        this.target = target;
        this.ahead = ahead;
        this.inputDims = inputDims;
    }

    /**
     * Reads {@code traceEvents} entries from the current position, which must be the start of one (the {@link
     * SplitAhead} thread's walk); true when the array's ']' ended them.
     */
    boolean entries() throws InterruptedIOException {
        while (true) {
            if (!entry()) {
                return true;
            }
        }
    }

    /** Reads the whole trace; true when it is complete (the root value closed). */
    boolean root() throws InterruptedIOException {
        int b = s.peek();
        if (b == '[') {
            s.pos++;
            target.traceEventsFound();
            events();
            return true;
        }
        if (b != '{') {
            throw new Bail("the root is not an object or array");
        }
        s.pos++;
        if (s.peek() == '}') {
            s.pos++;
            return true;
        }
        do {
            s.name();
            boolean traceEvents = s.stringIs(W_TRACEEVENTS);
            boolean distributedInfo = !traceEvents && s.stringIs(W_DISTRIBUTEDINFO);
            s.expect(':');
            int v = s.peek();
            if (traceEvents && v == '[') {
                s.pos++;
                target.traceEventsFound();
                events();
            } else if (distributedInfo && v == '{') {
                s.pos++;
                distributedInfo();
            } else {
                s.skipValue();
            }
        } while (s.next('}'));
        return true;
    }

    private void distributedInfo() {
        if (s.peek() == '}') {
            s.pos++;
            return;
        }
        do {
            s.name();
            boolean rank = s.stringIs(W_RANK);
            s.expect(':');
            int v = s.peek();
            if (rank && v == '"') {
                s.plainString();
                target.distributedRank(new String(s.buf, s.strOff, s.strLen, StandardCharsets.ISO_8859_1));
            } else if (rank && (v == '-' || (v >= '0' && v <= '9'))) {
                s.number();
                if (!s.numIsFloat) {
                    target.distributedRank(s.numberText());
                }
            } else {
                s.skipValue();
            }
        } while (s.next('}'));
    }

    private void events() throws InterruptedIOException {
        if (s.peek() == ']') {
            s.pos++;
            return;
        }
        while (true) {
            if (ahead != null) {
                s.peek();
                long position = s.position();
                if (position >= ahead.target) {
                    // at the split point: wait for the other thread's start (it is found by then, but for a busy box)
                    long start = ahead.awaitOffset();
                    if (start == Long.MAX_VALUE || position > start) {
                        // it found none, or its start is not an entry start of this walk: this walk reads on alone
                        ahead.close();
                        ahead = null;
                    } else if (position == start) {
                        int state = takeOver();
                        if (state == SplitAhead.AFTER_ARRAY) {
                            return;
                        }
                        if (state == SplitAhead.AFTER_ENTRY && !s.next(']')) {
                            return;
                        }
                    }
                }
            }
            if (!entry()) {
                return;
            }
        }
    }

    /** One entry, and the ',' or ']' after it: false after the ']'. */
    private boolean entry() throws InterruptedIOException {
        long ordinal = target.entry();
        if (s.peek() == '{') {
            event(ordinal);
        } else {
            s.skipValue();
            target.skippedEntry();
        }
        if ((ordinal & 1023) == 0) {
            target.checkpoint();
        }
        return s.next(']');
    }

    /**
     * At the second part's first entry: the entries the other thread recorded are reported as this walk would have
     * reported them, and the scanner moves on to where they end; returns how they end.
     */
    private int takeOver() throws InterruptedIOException {
        SplitAhead a = ahead;
        ahead = null;
        EventFields f = this.f;
        while (true) {
            SplitAhead.Chunk c = a.take();
            a.taken(c.size);
            for (int i = 0; i < c.size; i++) {
                long ordinal = target.entry();
                if (c.event[i]) {
                    c.fields(i, f);
                    target.event(f, ordinal);
                } else {
                    target.skippedEntry();
                }
                if ((ordinal & 1023) == 0) {
                    target.checkpoint();
                }
            }
            if (c.last) {
                a.close();
                if (!s.skipTo(c.endPosition)) {
                    throw new Bail("the input ended before the second part's end");
                }
                return c.endState;
            }
        }
    }

    private void event(long ordinal) {
        EventFields f = this.f;
        f.reset(s.position());
        s.pos++;
        if (s.peek() == '}') {
            s.pos++;
            target.event(f, ordinal);
            return;
        }
        do {
            s.name();
            int field = eventField();
            s.expect(':');
            switch (field) {
                case F_PH -> {
                    f.phSeen = true;
                    if (!stringValue() || !s.stringIs(W_X)) {
                        s.skipRestOfObject();
                        target.skippedEntry();
                        return;
                    }
                }
                case F_CAT -> {
                    f.cat = stringValue() ? category() : CAT_OTHER;
                    if (f.cat == CAT_OTHER) {
                        s.skipRestOfObject();
                        target.skippedEntry();
                        return;
                    }
                }
                case F_NAME -> {
                    if (s.peek() == '"') {
                        s.plainString();
                        f.name = names.get(s.buf, s.strOff, s.strLen);
                    } else {
                        s.skipValue();
                    }
                }
                case F_PID -> {
                    long n = integer();
                    if (n != MISSING) {
                        f.pid = n;
                        f.pidNumeric = true;
                    }
                }
                case F_TID -> {
                    long n = integer();
                    if (n != MISSING) {
                        f.tid = n;
                        f.tidNumeric = true;
                    }
                }
                case F_TS -> f.ts = micros();
                case F_DUR -> f.dur = micros();
                case F_ARGS -> {
                    if (s.peek() == '{') {
                        s.pos++;
                        args(inputDims && (f.cat == CAT_CPU_OP || f.cat == CAT_UNSEEN));
                    } else {
                        s.skipValue();
                    }
                }
                default -> s.skipValue();
            }
        } while (s.next('}'));
        target.event(f, ordinal);
    }

    /**
     * Reads a ph or cat value: true for a string (then in the scanner), false for another scalar (skipped). A
     * container there makes Jackson's walk skip only that container and read on inside the entry; that quirk is
     * left to it.
     */
    private boolean stringValue() {
        int v = s.peek();
        if (v == '"') {
            s.plainString();
            return true;
        }
        if (v == '{' || v == '[') {
            throw new Bail("ph or cat is not a scalar");
        }
        s.skipValue();
        return false;
    }

    private void args(boolean wantDims) {
        if (s.peek() == '}') {
            s.pos++;
            return;
        }
        do {
            s.name();
            int field = argField();
            s.expect(':');
            switch (field) {
                case A_DEVICE -> f.device(integer());
                case A_STREAM -> f.stream = integer();
                case A_CORRELATION -> f.correlation = integer();
                case A_EXTERNAL_ID -> f.externalId = integer();
                case A_INPUT_DIMS -> {
                    if (wantDims) {
                        textLen = 0;
                        compact(0);
                        f.dims = dims.get(text, 0, textLen);
                    } else {
                        s.skipValue();
                    }
                }
                default -> s.skipValue();
            }
        } while (s.next('}'));
    }

    private int eventField() {
        switch (s.strLen) {
            case 2:
                return s.stringIs(W_PH) ? F_PH : s.stringIs(W_TS) ? F_TS : F_OTHER;
            case 3:
                return s.stringIs(W_CAT)
                        ? F_CAT
                        : s.stringIs(W_PID) ? F_PID : s.stringIs(W_TID) ? F_TID : s.stringIs(W_DUR) ? F_DUR : F_OTHER;
            case 4:
                return s.stringIs(W_NAME) ? F_NAME : s.stringIs(W_ARGS) ? F_ARGS : F_OTHER;
            default:
                return F_OTHER;
        }
    }

    private int argField() {
        switch (s.strLen) {
            case 6:
                return s.stringIs(W_DEVICE) ? A_DEVICE : s.stringIs(W_STREAM) ? A_STREAM : F_OTHER;
            case 10:
                return s.stringIs(W_INPUT_DIMS) ? A_INPUT_DIMS : F_OTHER;
            case 11:
                return s.stringIs(W_CORRELATION) ? A_CORRELATION : s.stringIs(W_EXTERNAL_ID) ? A_EXTERNAL_ID : F_OTHER;
            default:
                return F_OTHER;
        }
    }

    private int category() {
        switch (s.strLen) {
            case 6:
                return s.stringIs(W_KERNEL) ? CAT_KERNEL : s.stringIs(W_CPU_OP) ? CAT_CPU_OP : CAT_OTHER;
            case 10:
                return s.stringIs(W_GPU_MEMCPY) ? CAT_MEMCPY : s.stringIs(W_GPU_MEMSET) ? CAT_MEMSET : CAT_OTHER;
            case 11:
                return s.stringIs(W_CUDA_DRIVER) ? CAT_RUNTIME : CAT_OTHER;
            case 12:
                return s.stringIs(W_CUDA_RUNTIME) ? CAT_RUNTIME : CAT_OTHER;
            case 15:
                return s.stringIs(W_USER_ANNOTATION) ? CAT_USER_ANNOTATION : CAT_OTHER;
            case 19:
                return s.stringIs(W_GPU_USER_ANNOTATION) ? CAT_GPU_ANNOTATION : CAT_OTHER;
            default:
                return CAT_OTHER;
        }
    }

    /** As the Jackson walk's integerOrMissing: a JSON integer that fits a long, or a string of one. */
    private long integer() {
        int v = s.peek();
        if (v == '-' || (v >= '0' && v <= '9')) {
            s.number();
            if (s.numIsFloat || !s.intFitsLong()) {
                return MISSING;
            }
            return s.intValue();
        }
        if (v == '"') {
            s.plainString();
            byte[] buf = s.buf;
            int off = s.strOff;
            int len = s.strLen;
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
                byte c = buf[off + i];
                if (c < '0' || c > '9') {
                    return MISSING;
                }
                n = n * 10 + (c - '0');
            }
            return neg ? -n : n;
        }
        s.skipValue();
        return MISSING;
    }

    /** As the Jackson walk's micros: exact ns from an integer, a decimal or a string; null is absent. */
    private long micros() {
        int v = s.peek();
        if (v == '-' || (v >= '0' && v <= '9')) {
            s.number();
            if (!s.numIsFloat) {
                return s.intFitsLong() ? Micros.fromIntegerMicros(s.intValue()) : Micros.INVALID;
            }
            long ns = Micros.parseShort(s.buf, s.numOff, s.numLen);
            return ns != Micros.INVALID ? ns : Micros.parse(chars(s.buf, s.numOff, s.numLen), 0, s.numLen);
        }
        if (v == '"') {
            s.plainString();
            return Micros.parse(chars(s.buf, s.strOff, s.strLen), 0, s.strLen);
        }
        if (v == 'n') {
            s.literal("null");
            return MISSING;
        }
        s.skipValue();
        return Micros.INVALID;
    }

    /** ASCII bytes as chars, in a reused array. */
    private char[] chars(byte[] buf, int off, int len) {
        if (text.length < len) {
            text = new char[Math.max(len, text.length * 2)];
        }
        for (int i = 0; i < len; i++) {
            text[i] = (char) buf[off + i];
        }
        return text;
    }

    /** Input Dims as compact JSON text, as the Jackson walk's compactJson writes it (ASCII, no escapes here). */
    private void compact(int depth) {
        if (depth > MAX_DIMS_DEPTH) {
            throw new Bail("Input Dims nested too deep");
        }
        int v = s.peek();
        switch (v) {
            case '[' -> {
                s.pos++;
                put('[');
                if (s.peek() == ']') {
                    s.pos++;
                } else {
                    boolean first = true;
                    do {
                        if (!first) {
                            put(',');
                        }
                        first = false;
                        compact(depth + 1);
                    } while (s.next(']'));
                }
                put(']');
            }
            case '{' -> {
                s.pos++;
                put('{');
                if (s.peek() == '}') {
                    s.pos++;
                } else {
                    boolean first = true;
                    do {
                        if (!first) {
                            put(',');
                        }
                        first = false;
                        s.name();
                        put('"');
                        put(s.buf, s.strOff, s.strLen);
                        put('"');
                        put(':');
                        s.expect(':');
                        compact(depth + 1);
                    } while (s.next('}'));
                }
                put('}');
            }
            case '"' -> {
                s.plainString();
                put('"');
                put(s.buf, s.strOff, s.strLen);
                put('"');
            }
            case 't' -> {
                s.literal("true");
                put("true");
            }
            case 'f' -> {
                s.literal("false");
                put("false");
            }
            case 'n' -> {
                s.literal("null");
                put("null");
            }
            default -> {
                s.number();
                put(s.buf, s.numOff, s.numLen);
            }
        }
    }

    private void put(char c) {
        if (textLen == text.length) {
            text = java.util.Arrays.copyOf(text, text.length * 2);
        }
        text[textLen++] = c;
    }

    private void put(String word) {
        for (int i = 0; i < word.length(); i++) {
            put(word.charAt(i));
        }
    }

    private void put(byte[] buf, int off, int len) {
        for (int i = 0; i < len; i++) {
            put((char) buf[off + i]);
        }
    }
}
