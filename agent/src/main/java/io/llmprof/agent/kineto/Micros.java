package io.llmprof.agent.kineto;

import java.math.BigDecimal;
import java.math.RoundingMode;

/**
 * Kineto µs numbers to exact ns. Epoch-sized µs (~1.7e15) with ns fractions need 19 significant digits, more
 * than a double holds, so the number's text is parsed, never a double.
 */
final class Micros {
    private Micros() {}

    /** Marks a number that is not a valid µs value (too large, not a number). */
    static final long INVALID = Long.MIN_VALUE;

    private static final long MAX_MICROS = Long.MAX_VALUE / 1000 - 1;

    /** µs as a JSON integer. */
    static long fromIntegerMicros(long micros) {
        if (micros > MAX_MICROS || micros < -MAX_MICROS) {
            return INVALID;
        }
        return micros * 1000;
    }

    /**
     * µs as decimal text: {@code -?digits(.digits)?([eE][+-]?digits)?}. Up to 3 fraction digits are exact;
     * more digits or an exponent go through {@link BigDecimal} and round half-even to the ns.
     */
    static long parse(char[] buf, int off, int len) {
        if (len <= 0) {
            return INVALID;
        }
        int i = off;
        int end = off + len;
        boolean negative = false;
        if (buf[i] == '-' || buf[i] == '+') {
            negative = buf[i] == '-';
            i++;
        }
        long intPart = 0;
        int intDigits = 0;
        while (i < end && buf[i] >= '0' && buf[i] <= '9') {
            if (++intDigits > 18) {
                return slow(buf, off, len);
            }
            intPart = intPart * 10 + (buf[i] - '0');
            i++;
        }
        long frac = 0;
        int fracDigits = 0;
        if (i < end && buf[i] == '.') {
            i++;
            while (i < end && buf[i] >= '0' && buf[i] <= '9') {
                if (fracDigits == 3) {
                    return slow(buf, off, len);
                }
                frac = frac * 10 + (buf[i] - '0');
                fracDigits++;
                i++;
            }
        }
        if (i != end || (intDigits == 0 && fracDigits == 0)) {
            return slow(buf, off, len);
        }
        if (intPart > MAX_MICROS) {
            return INVALID;
        }
        for (int d = fracDigits; d < 3; d++) {
            frac *= 10;
        }
        long ns = intPart * 1000 + frac;
        return negative ? -ns : ns;
    }

    /**
     * The common case of {@link #parse(char[], int, int)} on ASCII bytes: {@code digits(.digits)?} with at most
     * 18 integer and 3 fraction digits, no sign or exponent. Anything else is {@link #INVALID}: then ask {@link
     * #parse(char[], int, int)}, which decides.
     */
    static long parseShort(byte[] buf, int off, int len) {
        int i = off;
        int end = off + len;
        long intPart = 0;
        int intDigits = 0;
        while (i < end && buf[i] >= '0' && buf[i] <= '9') {
            if (++intDigits > 18) {
                return INVALID;
            }
            intPart = intPart * 10 + (buf[i] - '0');
            i++;
        }
        long frac = 0;
        int fracDigits = 0;
        if (i < end && buf[i] == '.') {
            i++;
            while (i < end && buf[i] >= '0' && buf[i] <= '9') {
                if (fracDigits == 3) {
                    return INVALID;
                }
                frac = frac * 10 + (buf[i] - '0');
                fracDigits++;
                i++;
            }
        }
        if (i != end || intDigits == 0 || intPart > MAX_MICROS) {
            return INVALID;
        }
        for (int d = fracDigits; d < 3; d++) {
            frac *= 10;
        }
        return intPart * 1000 + frac;
    }

    static long parse(String text) {
        return parse(text.toCharArray(), 0, text.length());
    }

    private static long slow(char[] buf, int off, int len) {
        try {
            BigDecimal ns = new BigDecimal(buf, off, len).movePointRight(3).setScale(0, RoundingMode.HALF_EVEN);
            return ns.longValueExact();
        } catch (NumberFormatException | ArithmeticException e) {
            return INVALID;
        }
    }
}
