package io.llmprof.deploy.logging;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Kafka's WARN and ERROR lines of a condition that lasts come again and again, each a little different: a node whose
 * quorum cannot form logs four lines per attempt, twice a second, with request dumps of several KB ("Connection to
 * node 2 ... failed authentication", "Request OutboundRequest(correlationId=154, ...)"). The console shows a line of
 * one shape (its logger and its text, with its cause, every run of digits, hex ones too, as {@code N}) once per
 * {@link #WINDOW_NS};
 * the others of that window are counted, and the next one shown says how many were not. A shape is the text's
 * bounded head and tail; at most {@link #MAX_SHAPES} shapes are remembered, the one seen the longest ago forgotten
 * first.
 * Thread-safe.
 */
final class RepeatedLines {
    /** How long a shape shown keeps its repeats off the console: 30 s. */
    static final long WINDOW_NS = 30_000_000_000L;

    static final int MAX_SHAPES = 256;
    /** Characters at each end of a line that make its shape: its condition and its cause, not its dump. */
    static final int SHAPE_CHARS = 200;
    /** Characters of a line normalized whole before it is cut (a longer one: its two halves' ends). */
    static final int NORMALIZED_CHARS = 16_384;

    private static final class Seen {
        long shownAtNs;
        long hidden;
    }

    private final LongSupplier nanoTime;
    private final Map<String, Seen> seen = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Seen> eldest) {
            return size() > MAX_SHAPES;
        }
    };

    RepeatedLines(LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
    }

    /**
     * Whether to show {@code line} of {@code logger} (its message and, after it, the one-line form of its throwable):
     * null to leave it off the console (a repeat within the window), else the line to show, with the count of the
     * repeats left off since its shape was last shown.
     */
    synchronized String show(String logger, String line) {
        String shape = shape(logger, line);
        long now = nanoTime.getAsLong();
        Seen s = seen.get(shape);
        if (s == null) {
            s = new Seen();
            s.shownAtNs = now;
            seen.put(shape, s);
            return line;
        }
        if (now - s.shownAtNs < WINDOW_NS) {
            s.hidden++;
            return null;
        }
        long hidden = s.hidden;
        s.shownAtNs = now;
        s.hidden = 0;
        return hidden == 0
                ? line
                : line + " [" + hidden + " more line(s) like this in the last " + (WINDOW_NS / 1_000_000_000L)
                        + " s not shown; LLMPROF_LOG_LEVEL=debug shows them]";
    }

    /**
     * The logger, and the first and the last {@link #SHAPE_CHARS} characters of the line (where a message's condition
     * and its cause are) with runs of (hex) digits as {@code N}: correlation ids, times, identity hashes. The line is
     * normalized before it is cut, so that ids of other lengths do not move the cut; of a line over {@link
     * #NORMALIZED_CHARS} characters, its head and its tail are normalized apart.
     */
    static String shape(String logger, String line) {
        StringBuilder n = new StringBuilder(Math.min(line.length(), NORMALIZED_CHARS + 1));
        if (line.length() <= NORMALIZED_CHARS) {
            normalized(n, line, 0, line.length());
        } else {
            normalized(n, line, 0, NORMALIZED_CHARS / 2);
            normalized(n.append('\u0000'), line, line.length() - NORMALIZED_CHARS / 2, line.length());
        }
        StringBuilder b = new StringBuilder(logger.length() + 2 + 2 * SHAPE_CHARS)
                .append(logger)
                .append(' ');
        if (n.length() <= 2 * SHAPE_CHARS) {
            return b.append(n).toString();
        }
        return b.append(n, 0, SHAPE_CHARS)
                .append('\u0000')
                .append(n, n.length() - SHAPE_CHARS, n.length())
                .toString();
    }

    /** Appends {@code s[from, to)} with every run of hex digits that holds a decimal digit (ids, hashes) as N. */
    private static void normalized(StringBuilder b, String s, int from, int to) {
        int i = from;
        while (i < to) {
            int j = i;
            boolean digit = false;
            while (j < to && Character.digit(s.charAt(j), 16) >= 0) {
                digit |= Character.isDigit(s.charAt(j));
                j++;
            }
            if (j == i) {
                b.append(s.charAt(i++));
            } else {
                if (digit) {
                    b.append('N');
                } else {
                    b.append(s, i, j);
                }
                i = j;
            }
        }
    }
}
