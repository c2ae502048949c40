package io.llmprof.agent.synth;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * A byte buffer in front of an output stream with just the writes a Kineto trace needs: pre-encoded byte runs,
 * decimal longs and ns as Kineto µs ({@code 1760000000000123.456}). No per-number allocation: multi-GB traces
 * are written at disk speed.
 */
final class JsonSink implements AutoCloseable {
    private static final byte[] DIGIT_PAIRS = digitPairs();

    private static final long[] POW10 = powersOf10();

    private final OutputStream out;
    private final byte[] buf;
    private int pos;
    private long flushed;
    // Timestamps of one trace share their leading digits: print those once per second of trace time.
    private long cachedHigh = -1;
    private final byte[] cachedHighDigits = new byte[20];
    private int cachedHighLen;

    JsonSink(OutputStream out, int bufferSize) {
        this.out = out;
        this.buf = new byte[bufferSize];
    }

    /** Bytes written so far, buffered ones included. */
    long bytes() {
        return flushed + pos;
    }

    void raw(byte[] bytes) throws IOException {
        int len = bytes.length;
        if (len > buf.length - pos) {
            flushBuffer();
            if (len > buf.length) {
                out.write(bytes);
                flushed += len;
                return;
            }
        }
        System.arraycopy(bytes, 0, buf, pos, len);
        pos += len;
    }

    /** ASCII text without escaping: for rare, known-safe strings only; hot paths use pre-encoded bytes. */
    void ascii(String text) throws IOException {
        raw(text.getBytes(StandardCharsets.UTF_8));
    }

    void num(long value) throws IOException {
        ensure(20);
        if (value < 0) {
            if (value == Long.MIN_VALUE) {
                ascii(Long.toString(value));
                return;
            }
            buf[pos++] = '-';
            value = -value;
        }
        pos = writeDigits(value, buf, pos);
    }

    /** ns as µs with exactly three fraction digits, as Kineto writes them. */
    void micros(long ns) throws IOException {
        ensure(24);
        if (ns < 0) {
            buf[pos++] = '-';
            ns = -ns;
        }
        long us = ns / 1000;
        long high = us / 1_000_000;
        if (high == 0) {
            pos = writeDigits(us, buf, pos);
        } else {
            if (high != cachedHigh) {
                cachedHigh = high;
                cachedHighLen = writeDigits(high, cachedHighDigits, 0);
            }
            System.arraycopy(cachedHighDigits, 0, buf, pos, cachedHighLen);
            pos += cachedHighLen;
            int low = (int) (us - high * 1_000_000);
            int p1 = (low / 10_000) * 2;
            int p2 = ((low / 100) % 100) * 2;
            int p3 = (low % 100) * 2;
            buf[pos] = DIGIT_PAIRS[p1];
            buf[pos + 1] = DIGIT_PAIRS[p1 + 1];
            buf[pos + 2] = DIGIT_PAIRS[p2];
            buf[pos + 3] = DIGIT_PAIRS[p2 + 1];
            buf[pos + 4] = DIGIT_PAIRS[p3];
            buf[pos + 5] = DIGIT_PAIRS[p3 + 1];
            pos += 6;
        }
        int frac = (int) (ns % 1000);
        buf[pos++] = '.';
        buf[pos++] = (byte) ('0' + frac / 100);
        buf[pos++] = (byte) ('0' + (frac / 10) % 10);
        buf[pos++] = (byte) ('0' + frac % 10);
    }

    void flush() throws IOException {
        flushBuffer();
        out.flush();
    }

    @Override
    public void close() throws IOException {
        try {
            flushBuffer();
        } finally {
            out.close();
        }
    }

    private void ensure(int n) throws IOException {
        if (buf.length - pos < n) {
            flushBuffer();
        }
    }

    private void flushBuffer() throws IOException {
        if (pos > 0) {
            out.write(buf, 0, pos);
            flushed += pos;
            pos = 0;
        }
    }

    /** Writes a non-negative value; returns the new position. */
    private static int writeDigits(long value, byte[] dst, int at) {
        int len = digitCount(value);
        int end = at + len;
        int i = end;
        while (value >= 100) {
            int pair = (int) (value % 100) * 2;
            value /= 100;
            dst[--i] = DIGIT_PAIRS[pair + 1];
            dst[--i] = DIGIT_PAIRS[pair];
        }
        if (value >= 10) {
            int pair = (int) value * 2;
            dst[--i] = DIGIT_PAIRS[pair + 1];
            dst[--i] = DIGIT_PAIRS[pair];
        } else {
            dst[--i] = (byte) ('0' + value);
        }
        return end;
    }

    private static int digitCount(long value) {
        if (value < 10) {
            return 1;
        }
        // log10 from the bit length, corrected by one comparison
        int t = ((64 - Long.numberOfLeadingZeros(value)) * 1233) >>> 12;
        return t + 1 - (value < POW10[t] ? 1 : 0);
    }

    private static long[] powersOf10() {
        long[] p = new long[19];
        p[0] = 1;
        for (int i = 1; i < 19; i++) {
            p[i] = p[i - 1] * 10;
        }
        return p;
    }

    private static byte[] digitPairs() {
        byte[] pairs = new byte[200];
        for (int i = 0; i < 100; i++) {
            pairs[2 * i] = (byte) ('0' + i / 10);
            pairs[2 * i + 1] = (byte) ('0' + i % 10);
        }
        return pairs;
    }
}
