package io.llmprof.agent.ingest;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;

/** An input stream that fails with {@link TooLarge} once more than {@code max} bytes were read from it. */
final class LimitedInputStream extends FilterInputStream {
    /** More bytes than allowed. */
    static final class TooLarge extends IOException {
        private static final long serialVersionUID = 1L;

        TooLarge(long max) {
            super("more than " + max + " bytes");
        }
    }

    private final long max;
    private long read;

    LimitedInputStream(InputStream in, long max) {
        super(in);
        this.max = max;
    }

    @Override
    public int read() throws IOException {
        int b = super.read();
        if (b >= 0) {
            count(1);
        }
        return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        int n = super.read(b, off, len);
        if (n > 0) {
            count(n);
        }
        return n;
    }

    @Override
    public long skip(long n) throws IOException {
        long s = super.skip(n);
        count(s);
        return s;
    }

    private void count(long n) throws TooLarge {
        read += n;
        if (read > max) {
            throw new TooLarge(max);
        }
    }
}
