package io.llmprof.dashboard.store;

import io.llmprof.events.DeadLetterHeaders;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a dead letter tells about the machines that wrote it, taken out before the dashboard serves it (unless it was
 * started with {@code --show-internals}): Java stack traces (the {@code __streams.errors.stacktrace} header, and a
 * trace pasted into any other header) and absolute file paths, reduced to their file name. The API has no
 * authentication; a reader of the page needs the file name and the message, not the layout of the agent's disk.
 */
public final class Internals {
    /** A path segment: no separator, space, quote, bracket or list punctuation (a path ends where a sentence goes on). */
    private static final String SEGMENT = "[^/\\\\\\s:;,'\"<>()\\[\\]{}|]+";
    /**
     * An absolute Unix path of two segments or more ({@code /a/b}, {@code file:///a/b}), not inside a word, a
     * relative path or a URL ({@code https://host/a/b} has a word or a slash before each of its slashes).
     */
    private static final Pattern UNIX =
            Pattern.compile("(?<![\\w.~:/\\\\-])(?:file:/{0,2})?(?:/" + SEGMENT + ")+/(" + SEGMENT + ")");
    /** An absolute Windows path ({@code C:\a\b}, {@code \\server\share\b}). */
    private static final Pattern WINDOWS =
            Pattern.compile("(?<![\\w.~/\\\\-])(?:[A-Za-z]:|\\\\)(?:\\\\" + SEGMENT + ")+\\\\(" + SEGMENT + ")");
    /** The first frame of a Java stack trace pasted into a text: {@code \n\tat pkg.Class.method(...)}. */
    private static final Pattern FRAME = Pattern.compile("\\R\\s*at [\\w$.]+\\(");

    private Internals() {}

    /** True for a header that is only internals (the stack trace Kafka Streams and the agent write). */
    static boolean internalHeader(String name) {
        return DeadLetterHeaders.STACKTRACE.equals(name);
    }

    /** The text with a pasted stack trace cut off (from its first frame) and absolute paths reduced to file names. */
    public static String redact(String text) {
        if (text == null || text.isEmpty()) {
            return text;
        }
        String out = text;
        Matcher frame = FRAME.matcher(out);
        if (frame.find()) {
            out = out.substring(0, frame.start());
        }
        out = UNIX.matcher(out).replaceAll("$1");
        return WINDOWS.matcher(out).replaceAll("$1");
    }
}
