package io.llmprof.agent.kineto;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;

/**
 * A strict JSON tokenizer over raw bytes for the fast path of {@link KinetoReader}: Kineto traces are ASCII
 * with no escapes in the strings the reader keeps, so a token is a range of the buffer and nothing is decoded
 * or copied. It accepts only a subset of what Jackson accepts, and reads it the same way; anything else (an
 * escape or a non-ASCII byte in a kept string, invalid or truncated JSON, a read error, a limit) throws {@link
 * Bail}, and the reader starts over with Jackson, which then reports exactly what it always reported.
 *
 * <p>A token's bytes stay contiguous in {@link #buf}: refilling moves the bytes from the current token's start
 * to the front (the buffer grows up to {@link #MAX_TOKEN} for one long token).
 */
final class ByteScanner {
    /** Thrown for whatever the fast path does not handle; carries no stack trace. */
    static final class Bail extends RuntimeException {
        Bail(String why) {
            super(why, null, false, false);
        }
    }

    private static final int INITIAL = 1 << 16;
    private static final int READ = 8000;
    private static final int MAX_TOKEN = 1 << 20;
    private static final int MAX_NUMBER = 500;
    private static final int MAX_DEPTH = 200;
    /** Jackson's default limit on a field name; longer ones are its to report. */
    private static final int MAX_NAME = 50_000;

    private final InputStream in;
    byte[] buf = new byte[INITIAL];
    int pos;
    private int limit;
    /** Absolute offset of buf[0] in the stream. */
    private long base;
    /** Start of the token being read: refills keep buf[mark..limit). */
    private int mark = -1;

    /** Last string read: buf[strOff, strOff + strLen), quotes excluded. */
    int strOff;

    int strLen;
    /** The last string held a backslash escape (its raw bytes are not its value). */
    boolean strEscaped;

    /** Last number read: buf[numOff, numOff + numLen), and whether it had a fraction or exponent. */
    int numOff;

    int numLen;
    boolean numIsFloat;

    ByteScanner(InputStream in) {
        this(in, 0);
    }

    /** @param base offset in the file of the stream's first byte (a scanner that starts mid-file) */
    ByteScanner(InputStream in, long base) {
        this.in = in;
        this.base = base;
    }

    /**
     * Moves on to the absolute offset {@code target} (not before the current position), reading through the bytes
     * in between without tokenizing them: the input's counters and ring stay as a full read leaves them.
     *
     * @return false when the input ends before {@code target}
     */
    boolean skipTo(long target) {
        mark = -1;
        while (base + limit < target) {
            pos = limit;
            if (!fill()) {
                return false;
            }
        }
        if (target < base + pos) {
            throw new IllegalArgumentException("cannot skip back to " + target + " from " + (base + pos));
        }
        pos = (int) (target - base);
        return true;
    }

    /** Offset in the stream of the next unread byte. */
    long position() {
        return base + pos;
    }

    /** Reads more bytes; false at end of input. Keeps the current token (from {@link #mark}) in the buffer. */
    private boolean fill() {
        int keep = mark >= 0 ? mark : pos;
        if (keep > 0) {
            System.arraycopy(buf, keep, buf, 0, limit - keep);
            base += keep;
            pos -= keep;
            limit -= keep;
            if (mark >= 0) {
                mark = 0;
            }
            // token offsets recorded before the move shift with it
            strOff -= keep;
            numOff -= keep;
        }
        if (limit == buf.length) {
            if (buf.length >= MAX_TOKEN) {
                throw new Bail("token longer than " + MAX_TOKEN + " bytes");
            }
            buf = java.util.Arrays.copyOf(buf, buf.length * 2);
        }
        int n;
        try {
            // Jackson's read size: the tracker's ring then still holds an event's bytes for its snippet
            n = in.read(buf, limit, Math.min(buf.length - limit, READ));
        } catch (InterruptedIOException e) {
            throw new InterruptedRead(e);
        } catch (IOException e) {
            throw new Bail("read error: " + e);
        }
        if (n <= 0) {
            return false;
        }
        limit += n;
        return true;
    }

    /** Wraps an interruption so that it passes through code that cannot throw checked exceptions. */
    static final class InterruptedRead extends RuntimeException {
        final InterruptedIOException cause;

        InterruptedRead(InterruptedIOException cause) {
            super(cause.getMessage(), cause, false, false);
            this.cause = cause;
        }
    }

    /** The next non-whitespace byte, not consumed; -1 at end of input. */
    int peek() {
        // small enough for C1 (the launcher's JIT for analyze) to inline; the loop is out of line
        int p = pos;
        if (p < limit) {
            byte c = buf[p];
            if (c > ' ') {
                return c;
            }
        }
        return peekSlow();
    }

    private int peekSlow() {
        // locals, not fields, in the hot loops: C1 does not hoist field loads
        while (true) {
            byte[] b = buf;
            int lim = limit;
            int p = pos;
            while (p < lim) {
                byte c = b[p];
                if (c > ' ' || (c != ' ' && c != '\n' && c != '\r' && c != '\t')) {
                    pos = p;
                    return c & 0xff;
                }
                p++;
            }
            pos = p;
            if (!fill()) {
                return -1;
            }
        }
    }

    /** Makes at least n bytes from pos available, unless the input ends first. */
    private void ensure(int n) {
        if (limit - pos >= n) {
            return;
        }
        mark = pos;
        while (limit - mark < n && fill()) {
            // keep reading
        }
        mark = -1;
    }

    /** Consumes the next non-whitespace byte, which must be {@code c}. */
    void expect(char c) {
        int p = pos;
        if (p < limit && buf[p] == c) {
            pos = p + 1;
            return;
        }
        expectSlow(c);
    }

    private void expectSlow(char c) {
        if (peek() != c) {
            throw new Bail("expected '" + c + "'");
        }
        pos++;
    }

    /** After a value inside a container: true for ',' (consumed), false for {@code close} (consumed). */
    boolean next(char close) {
        int p = pos;
        if (p < limit) {
            byte c = buf[p];
            if (c == ',') {
                pos = p + 1;
                return true;
            }
            if (c == close) {
                pos = p + 1;
                return false;
            }
        }
        return nextSlow(close);
    }

    private boolean nextSlow(char close) {
        int b = peek();
        pos++;
        if (b == ',') {
            return true;
        }
        if (b == close) {
            return false;
        }
        throw new Bail("expected ',' or '" + close + "'");
    }

    /**
     * Reads a string at the current position (the opening quote next, after whitespace) into {@link #strOff}
     * and {@link #strLen}.
     */
    void string() {
        expect('"');
        mark = pos;
        boolean escaped = false;
        int i = pos;
        while (true) {
            byte[] b = buf;
            int lim = limit;
            while (i < lim) {
                byte c = b[i];
                if (c == '"' || c == '\\' || c < 0x20) {
                    break;
                }
                i++;
            }
            if (i >= lim) {
                int done = i - mark;
                if (!fill()) {
                    throw new Bail("end of input inside a string");
                }
                i = mark + done;
                continue;
            }
            byte c = b[i];
            if (c == '"') {
                break;
            }
            if (c != '\\') {
                // bytes >= 0x80 are negative: UTF-8 validation and decoding are Jackson's
                throw new Bail(c < 0 ? "non-ASCII text" : "control character in a string");
            }
            escaped = true;
            // the escaped byte and, for \\u, its four hex digits
            while (i + 6 > limit) {
                int done = i - mark;
                if (!fill()) {
                    break;
                }
                i = mark + done;
            }
            if (i + 2 > limit) {
                throw new Bail("end of input inside a string");
            }
            byte e = buf[i + 1];
            if (e == 'u') {
                if (i + 6 > limit) {
                    throw new Bail("end of input inside a string");
                }
                for (int k = i + 2; k < i + 6; k++) {
                    if (Character.digit(buf[k], 16) < 0) {
                        throw new Bail("bad \\u escape");
                    }
                }
                i += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                i += 2;
            } else {
                throw new Bail("bad escape");
            }
        }
        strOff = mark;
        strLen = i - mark;
        strEscaped = escaped;
        pos = i + 1;
        mark = -1;
    }

    /**
     * A field name, without its colon (compare it before reading on: a refill may move it). Its raw bytes must
     * be its value: an escaped name might read "ts".
     */
    void name() {
        plainString();
        if (strLen > MAX_NAME) {
            throw new Bail("long field name");
        }
    }

    /** A string whose value is needed: its raw bytes must be its value. */
    void plainString() {
        string();
        if (strEscaped) {
            throw new Bail("escaped string");
        }
    }

    /** Reads a number at the current position (its first byte next) into {@link #numOff} and {@link #numLen}. */
    void number() {
        peek();
        ensure(MAX_NUMBER + 2); // then the number's end is in the buffer, or the input ends
        byte[] b = buf;
        int lim = limit;
        int start = pos;
        int i = start;
        boolean isFloat = false;
        // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? , as Jackson accepts by default
        if (i < lim && b[i] == '-') {
            i++;
        }
        if (i >= lim) {
            throw new Bail("not a number");
        }
        byte c = b[i];
        if (c == '0') {
            i++;
        } else if (c >= '1' && c <= '9') {
            i++;
            while (i < lim && isDigit(b[i])) {
                i++;
            }
        } else {
            throw new Bail("not a number");
        }
        if (i < lim && b[i] == '.') {
            isFloat = true;
            i++;
            if (i >= lim || !isDigit(b[i])) {
                throw new Bail("bad fraction");
            }
            while (i < lim && isDigit(b[i])) {
                i++;
            }
        }
        if (i < lim && (b[i] == 'e' || b[i] == 'E')) {
            isFloat = true;
            i++;
            if (i < lim && (b[i] == '+' || b[i] == '-')) {
                i++;
            }
            if (i >= lim || !isDigit(b[i])) {
                throw new Bail("bad exponent");
            }
            while (i < lim && isDigit(b[i])) {
                i++;
            }
        }
        if (i - start > MAX_NUMBER) {
            throw new Bail("long number");
        }
        // what follows must end the number (Jackson reports "12abc" as an error); i == lim: the input ended
        if (i < lim) {
            c = b[i];
            if (c != ',' && c != '}' && c != ']' && c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                throw new Bail("bad number end");
            }
        }
        numOff = start;
        numLen = i - start;
        numIsFloat = isFloat;
        pos = i;
    }

    private static boolean isDigit(byte c) {
        return c >= '0' && c <= '9';
    }

    /** The last number (an integer) fits a long: Jackson's INT or LONG, not BIG_INTEGER. */
    boolean intFitsLong() {
        int digits = buf[numOff] == '-' ? numLen - 1 : numLen;
        return digits <= 18 || new BigInteger(numberText()).bitLength() < 64;
    }

    String numberText() {
        return new String(buf, numOff, numLen, StandardCharsets.US_ASCII);
    }

    /** The last number (an integer that fits a long) as a long. */
    long intValue() {
        int i = numOff;
        int end = numOff + numLen;
        boolean neg = buf[i] == '-';
        if (neg) {
            i++;
        }
        if (end - i > 18) {
            return new BigInteger(numberText()).longValue();
        }
        long n = 0;
        for (; i < end; i++) {
            n = n * 10 + (buf[i] - '0');
        }
        return neg ? -n : n;
    }

    /** Consumes a literal (true, false, null) whose first byte is next. */
    void literal(String word) {
        peek();
        int n = word.length();
        ensure(n + 1);
        if (limit - pos < n) {
            throw new Bail("end of input inside a literal");
        }
        for (int k = 0; k < n; k++) {
            if (buf[pos + k] != word.charAt(k)) {
                throw new Bail("bad literal");
            }
        }
        pos += n;
        // "nullx" is an error for Jackson
        if (pos < limit) {
            byte c = buf[pos];
            if (c != ',' && c != '}' && c != ']' && c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                throw new Bail("bad literal end");
            }
        }
    }

    /** Skips one value of any kind, checking its syntax. */
    void skipValue() {
        int end = skipInBuffer(pos, false);
        if (end >= 0) {
            pos = end;
        } else {
            skipValue(0);
        }
    }

    /**
     * Skips what is left of an object after one of its values: the ',' or '}' next, then any further members, up to
     * and including its '}'.
     */
    void skipRestOfObject() {
        int end = skipInBuffer(pos, true);
        if (end >= 0) {
            pos = end;
        } else {
            skipRestOfObjectByWalk();
        }
    }

    /** {@link #skipValue()} by the checking walk alone, without the loop over the buffer (and for tests). */
    void skipValueByWalk() {
        skipValue(0);
    }

    /** {@link #skipRestOfObject()} by the checking walk alone (and for tests). */
    void skipRestOfObjectByWalk() {
        while (next('}')) {
            name();
            expect(':');
            skipValue(0);
        }
    }

    /** Levels {@link #skipInBuffer} keeps track of (one bit each); deeper values are the recursive walk's. */
    private static final int FAST_DEPTH = 62;

    /**
     * The common case of {@link #skipValue()} and {@link #skipRestOfObject()} in one loop over the buffer, with no
     * call per token: a value (or the rest of an object, {@code restOfObject}) that lies wholly in the buffer, whose
     * strings hold no escape, control character or non-ASCII byte, nested at most {@value #FAST_DEPTH} deep, its
     * numbers and names within the limits. Returns the offset just after it, where the checking walk would have
     * stopped; -1 for anything else, malformed JSON included, which the checking walk then reads from the same
     * start (and reports, or reads, exactly as before). It accepts nothing that walk would refuse.
     */
    private int skipInBuffer(int start, boolean restOfObject) {
        byte[] b = buf;
        int lim = limit;
        int i = start;
        long objects = restOfObject ? 1 : 0; // bit k: level k + 1 is an object (else an array)
        int depth = restOfObject ? 1 : 0;
        boolean afterValue = restOfObject;
        while (true) {
            if (!afterValue) {
                // a value: its first byte, after whitespace
                i = whitespaceEnd(b, i, lim);
                if (i >= lim) {
                    return -1;
                }
                byte c = b[i];
                if (c == '"') {
                    i = stringEnd(b, i + 1, lim, MAX_TOKEN);
                } else if (c == '{' || c == '[') {
                    i++;
                    byte close = c == '{' ? (byte) '}' : (byte) ']';
                    i = whitespaceEnd(b, i, lim);
                    if (i >= lim) {
                        return -1;
                    }
                    if (b[i] == close) {
                        i++; // empty
                    } else {
                        if (depth == FAST_DEPTH) {
                            return -1;
                        }
                        objects = objects << 1 | (close == '}' ? 1 : 0);
                        depth++;
                        if (close == '}') {
                            i = member(b, i, lim);
                            if (i < 0) {
                                return -1;
                            }
                        }
                        continue; // its first value
                    }
                } else if (c == 't' || c == 'f' || c == 'n') {
                    i = literalEnd(b, i, lim, c == 't' ? TRUE : c == 'f' ? FALSE : NULL);
                } else {
                    i = numberEnd(b, i, lim);
                }
                if (i < 0) {
                    return -1;
                }
            }
            // after a value: done at the top, else ',' and the next one, or the container's end
            if (depth == 0) {
                return i;
            }
            i = whitespaceEnd(b, i, lim);
            if (i >= lim) {
                return -1;
            }
            byte c = b[i];
            boolean object = (objects & 1) != 0;
            i++;
            if (c == ',') {
                if (object) {
                    i = member(b, i, lim);
                    if (i < 0) {
                        return -1;
                    }
                }
                afterValue = false;
            } else if (c == (object ? '}' : ']')) {
                objects >>>= 1;
                depth--;
                afterValue = true;
            } else {
                return -1;
            }
        }
    }

    /** A member's name and its ':' from {@code i} (whitespace first); the offset after the ':', or -1. */
    private static int member(byte[] b, int i, int lim) {
        i = whitespaceEnd(b, i, lim);
        if (i >= lim || b[i] != '"') {
            return -1;
        }
        i = stringEnd(b, i + 1, lim, MAX_NAME);
        if (i < 0) {
            return -1;
        }
        i = whitespaceEnd(b, i, lim);
        return i < lim && b[i] == ':' ? i + 1 : -1;
    }

    /** The offset of the first byte from {@code i} that is not JSON whitespace; {@code lim} if there is none. */
    private static int whitespaceEnd(byte[] b, int i, int lim) {
        while (i < lim) {
            byte c = b[i];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                return i;
            }
            i++;
        }
        return lim;
    }

    /**
     * The offset after the closing quote of a string whose bytes start at {@code i}: -1 when it holds an escape, a
     * control character or a non-ASCII byte, runs past the buffer, or is longer than {@code max}.
     */
    private static int stringEnd(byte[] b, int i, int lim, int max) {
        int first = i;
        while (i < lim) {
            byte c = b[i];
            if (c == '"') {
                return i - first <= max ? i + 1 : -1;
            }
            if (c == '\\' || c < 0x20) {
                return -1;
            }
            i++;
        }
        return -1;
    }

    private static final byte[] TRUE = ascii("true");
    private static final byte[] FALSE = ascii("false");
    private static final byte[] NULL = ascii("null");

    /** The offset after a literal spelled {@code word} at {@code i} and followed by a byte that may end it; or -1. */
    private static int literalEnd(byte[] b, int i, int lim, byte[] word) {
        int end = i + word.length;
        if (end >= lim) {
            return -1;
        }
        for (int k = 0; k < word.length; k++) {
            if (b[i + k] != word[k]) {
                return -1;
            }
        }
        return endsToken(b[end]) ? end : -1;
    }

    /** The offset after a number at {@code i}, as {@link #number()} accepts it, followed by a byte that may end it. */
    private static int numberEnd(byte[] b, int i, int lim) {
        int start = i;
        if (i < lim && b[i] == '-') {
            i++;
        }
        if (i >= lim) {
            return -1;
        }
        byte c = b[i];
        if (c == '0') {
            i++;
        } else if (c >= '1' && c <= '9') {
            i++;
            while (i < lim && isDigit(b[i])) {
                i++;
            }
        } else {
            return -1;
        }
        if (i < lim && b[i] == '.') {
            i++;
            if (i >= lim || !isDigit(b[i])) {
                return -1;
            }
            while (i < lim && isDigit(b[i])) {
                i++;
            }
        }
        if (i < lim && (b[i] == 'e' || b[i] == 'E')) {
            i++;
            if (i < lim && (b[i] == '+' || b[i] == '-')) {
                i++;
            }
            if (i >= lim || !isDigit(b[i])) {
                return -1;
            }
            while (i < lim && isDigit(b[i])) {
                i++;
            }
        }
        return i < lim && i - start <= MAX_NUMBER && endsToken(b[i]) ? i : -1;
    }

    private static boolean endsToken(byte c) {
        return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
    }

    private void skipValue(int depth) {
        if (depth > MAX_DEPTH) {
            throw new Bail("nesting too deep");
        }
        int b = peek();
        switch (b) {
            case '{' -> {
                pos++;
                if (peek() == '}') {
                    pos++;
                    return;
                }
                do {
                    name();
                    expect(':');
                    skipValue(depth + 1);
                } while (next('}'));
            }
            case '[' -> {
                pos++;
                if (peek() == ']') {
                    pos++;
                    return;
                }
                do {
                    skipValue(depth + 1);
                } while (next(']'));
            }
            case '"' -> string();
            case 't' -> literal("true");
            case 'f' -> literal("false");
            case 'n' -> literal("null");
            default -> number();
        }
    }

    /** True when the last string's raw bytes equal {@code word} (ASCII). */
    boolean stringIs(byte[] word) {
        int n = strLen;
        if (n != word.length) {
            return false;
        }
        byte[] b = buf;
        int off = strOff;
        for (int i = 0; i < n; i++) {
            if (b[off + i] != word[i]) {
                return false;
            }
        }
        return true;
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
