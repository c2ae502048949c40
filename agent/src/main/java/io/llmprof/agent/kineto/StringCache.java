package io.llmprof.agent.kineto;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Deduplicates the strings a trace repeats thousands of times (kernel names, Input Dims) without building a
 * String for a hit. Fixed size, direct-mapped: a miss overwrites the slot, so memory stays bounded.
 */
public final class StringCache {
    private static final int MAX_CACHED_LENGTH = 4096;
    /** Longer strings are built each time, never cached: with the slot count, this bounds the memory. */
    private final int maxCachedLength;

    private final String[] slots;
    /** The ASCII bytes of slots filled by {@link #get(byte[], int, int)}, compared without decoding. */
    private final byte[][] bytes;
    /** The chars of slots filled by {@link #get(char[], int, int)}: an array compare, not a charAt per char. */
    private final char[][] chars;

    private final int mask;

    public StringCache(int sizePowerOfTwo) {
        this(sizePowerOfTwo, MAX_CACHED_LENGTH);
    }

    /** A cache of {@code sizePowerOfTwo} slots for strings of at most {@code maxCachedLength} chars. */
    public StringCache(int sizePowerOfTwo, int maxCachedLength) {
        this.maxCachedLength = maxCachedLength;
        if (Integer.bitCount(sizePowerOfTwo) != 1) {
            throw new IllegalArgumentException("size must be a power of two: " + sizePowerOfTwo);
        }
        slots = new String[sizePowerOfTwo];
        bytes = new byte[sizePowerOfTwo][];
        chars = new char[sizePowerOfTwo][];
        mask = sizePowerOfTwo - 1;
    }

    /** The string of {@code len} chars of {@code buf} from {@code off}: the cached one when it is there. */
    public String get(char[] buf, int off, int len) {
        if (len > maxCachedLength) {
            return new String(buf, off, len);
        }
        int h = 0;
        for (int i = off, end = off + len; i < end; i++) {
            h = 31 * h + buf[i];
        }
        int slot = (h ^ (h >>> 16)) & mask;
        String s = slots[slot];
        char[] c = chars[slot];
        if (s != null && c != null && c.length == len && Arrays.equals(c, 0, len, buf, off, off + len)) {
            return s;
        }
        c = Arrays.copyOfRange(buf, off, off + len);
        s = new String(c);
        slots[slot] = s;
        chars[slot] = c;
        bytes[slot] = null;
        return s;
    }

    /**
     * The same for ASCII bytes (the fast path guarantees them): one byte per char, and the same hash as the
     * chars would have.
     */
    String get(byte[] buf, int off, int len) {
        if (len > maxCachedLength) {
            return new String(buf, off, len, StandardCharsets.ISO_8859_1);
        }
        int h = 0;
        for (int i = off, end = off + len; i < end; i++) {
            h = 31 * h + buf[i];
        }
        int slot = (h ^ (h >>> 16)) & mask;
        String s = slots[slot];
        byte[] b = bytes[slot];
        if (s != null && b != null && b.length == len && Arrays.equals(b, 0, len, buf, off, off + len)) {
            return s;
        }
        b = Arrays.copyOfRange(buf, off, off + len);
        s = new String(b, StandardCharsets.ISO_8859_1);
        slots[slot] = s;
        bytes[slot] = b;
        chars[slot] = null;
        return s;
    }

    private char[] scratch = new char[256];

    String get(StringBuilder text) {
        int len = text.length();
        if (scratch.length < len) {
            scratch = new char[Math.max(len, scratch.length * 2)];
        }
        text.getChars(0, len, scratch, 0);
        return get(scratch, 0, len);
    }
}
