package io.llmprof.agent.kineto;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * Counts the bytes handed to the JSON parser and keeps the most recent ones in a ring, so that a bad
 * event or a syntax error can be quoted (dead letters carry the raw bytes) without buffering the file.
 */
final class InputTracker extends FilterInputStream {
    private static final int RING = 1 << 16;

    private final byte[] ring = new byte[RING];
    private long total;

    InputTracker(InputStream in) {
        this(in, 0);
    }

    /** @param start the offset of the stream's first byte in the whole input (a tracker that starts mid-file) */
    InputTracker(InputStream in, long start) {
        super(in);
        this.total = start;
    }

    long total() {
        return total;
    }

    @Override
    public int read() throws IOException {
        int b = super.read();
        if (b >= 0) {
            ring[(int) (total & (RING - 1))] = (byte) b;
            total++;
        }
        return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        int n = in.read(b, off, len);
        if (n > 0) {
            int pos = (int) (total & (RING - 1));
            int first = Math.min(n, RING - pos);
            if (n >= RING) {
                // Only the last RING bytes can be kept.
                int skip = n - RING;
                long start = total + skip;
                int p = (int) (start & (RING - 1));
                int a = RING - p;
                System.arraycopy(b, off + skip, ring, p, a);
                System.arraycopy(b, off + skip + a, ring, 0, RING - a);
            } else {
                System.arraycopy(b, off, ring, pos, first);
                if (first < n) {
                    System.arraycopy(b, off + first, ring, 0, n - first);
                }
            }
            total += n;
        }
        return n;
    }

    @Override
    public long skip(long n) throws IOException {
        // The parser never skips; reading keeps the ring consistent if something else does.
        byte[] tmp = new byte[(int) Math.min(n, 8192)];
        int r = read(tmp, 0, tmp.length);
        return Math.max(r, 0);
    }

    /** Text of the bytes [from, to) when still in the ring, clipped to what is available; at most maxBytes. */
    String snippet(long from, long to, int maxBytes) {
        long lo = Math.max(Math.max(from, 0), total - RING);
        long hi = Math.min(Math.min(to, total), lo + maxBytes);
        if (hi <= lo) {
            return "";
        }
        byte[] out = new byte[(int) (hi - lo)];
        for (int i = 0; i < out.length; i++) {
            out[i] = ring[(int) ((lo + i) & (RING - 1))];
        }
        return new String(out, StandardCharsets.UTF_8);
    }
}
