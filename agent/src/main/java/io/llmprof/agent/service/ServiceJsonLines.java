package io.llmprof.agent.service;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.StringCache;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.service.ServiceAttributes;
import io.llmprof.events.service.ServiceEvent;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.Reader;
import java.nio.CharBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * llmprof's JSON-lines format for service events, version 1 (docs/service-events.md): one JSON object per line,
 * reserved keys {@code v} (format version, 1 when absent), {@code ts_ns} (required), {@code dur_ns} (absent for an
 * instant event), {@code name} (required), {@code domain}, {@code pid}, {@code tid}; every other key is an
 * attribute under msServiceProfiler's conventions ({@code rid}, {@code X=}, {@code X+}, {@code scope#X}, plain
 * labels), split by {@link ServiceAttributes}.
 *
 * <p>Bad lines never stop the file: each is a problem naming the file and line, and reading goes on. Memory is
 * one line at a time, at most {@link #MAX_LINE_CHARS} characters (a longer line is skipped as a problem).
 */
public final class ServiceJsonLines {
    public static final int VERSION = 1;
    public static final int MAX_LINE_CHARS = 1 << 20;
    static final Set<String> RESERVED = Set.of("v", "ts_ns", "dur_ns", "name", "domain", "pid", "tid");
    /** One reader for every line: {@code mapper.readTree(String)} resolves the JsonNode type on each call. */
    private static final com.fasterxml.jackson.databind.ObjectReader TREE =
            Json.mapper().readerFor(JsonNode.class);

    /** What a read gave. */
    public record Summary(long lines, long events, long problems) {}

    private ServiceJsonLines() {}

    public static Summary read(Path file, Consumer<ServiceEvent> events, Consumer<InputProblem> problems)
            throws IOException {
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            return read(file.toString(), r, events, problems);
        }
    }

    public static Summary read(
            String label, Reader reader, Consumer<ServiceEvent> events, Consumer<InputProblem> problems)
            throws IOException {
        return read(label, reader, MAX_LINE_CHARS, events, new Problems() {
            @Override
            public boolean wantsDetail() {
                return true;
            }

            @Override
            public void bad(InputProblem p, String line) {
                problems.accept(p);
            }

            @Override
            public void counted(AnomalyKind kind) {}
        });
    }

    /** Where bad lines go; a reader that only counts most of them can say so and spare their text. */
    public interface Problems {
        /** Whether the next bad line's problem and text are wanted, else it is only {@link #counted}. */
        boolean wantsDetail();

        /** A bad line with what is wrong (its snippet at most 80 characters) and its whole text. */
        void bad(InputProblem problem, String line);

        /** A bad line whose detail was not wanted. */
        void counted(AnomalyKind kind);
    }

    /**
     * As {@link #read(String, Reader, Consumer, Consumer)}, with a line limit of {@code maxLineChars}; a bad line's
     * text and message are built only while {@code problems} wants them, so a body of millions of bad lines
     * allocates nearly nothing per line.
     */
    public static Summary read(
            String label, Reader reader, int maxLineChars, Consumer<ServiceEvent> events, Problems problems)
            throws IOException {
        LineParser p = new LineParser(label, maxLineChars, events, problems);
        char[] buf = new char[1 << 16];
        for (int n; (n = reader.read(buf, 0, buf.length)) >= 0; ) {
            int from = 0;
            while (from < n) {
                if (p.line.length() == 0 && !p.tooLong) {
                    // A line that starts in this read: parsed where it lies, up to its newline, in one pass.
                    int next = p.lineInBuffer(buf, from, n);
                    if (next >= 0) {
                        from = next;
                        continue;
                    }
                }
                int i = indexOfNewline(buf, from, n);
                if (i < 0) {
                    break;
                }
                if (p.line.length() == 0 && !p.tooLong) {
                    p.endLine(buf, from, i - from); // the whole line is in the buffer: read it there
                } else {
                    p.append(buf, from, i - from);
                    p.endLine();
                }
                from = i + 1;
            }
            p.append(buf, from, n - from);
        }
        p.endOfInput();
        return new Summary(p.lineNo, p.ok, p.bad);
    }

    /** The line being read and what the lines so far gave; a line is at most {@code maxLineChars} characters. */
    private static final class LineParser {
        final String label;
        final int maxLineChars;
        final Consumer<ServiceEvent> events;
        final Problems problems;
        final StringBuilder line = new StringBuilder();
        /** A line that spanned reads, copied out of {@link #line} to be read. */
        char[] scratch = new char[1024];
        /** The fast path, with the strings lines repeat (keys, names, request ids) built once. */
        final StreamedLine streamedLine = new StreamedLine(new StringCache(1024, StreamedLine.MAX_CACHED_CHARS));

        boolean tooLong;
        long lineNo;
        long ok;
        long bad;

        LineParser(String label, int maxLineChars, Consumer<ServiceEvent> events, Problems problems) {
            this.label = label;
            this.maxLineChars = maxLineChars;
            this.events = events;
            this.problems = problems;
        }

        void append(char[] buf, int from, int len) {
            int room = maxLineChars - line.length();
            if (len > room) {
                tooLong = true;
                len = Math.max(0, room);
            }
            line.append(buf, from, len);
        }

        void endOfInput() {
            if (line.length() > 0 || tooLong) {
                endLine();
            }
        }

        void endLine() {
            if (tooLong) {
                lineNo++;
                reportTooLong(line); // the line's first maxLineChars characters
                line.setLength(0);
                tooLong = false;
                return;
            }
            int n = line.length();
            if (scratch.length < n) {
                scratch = new char[Math.max(n, scratch.length * 2)];
            }
            line.getChars(0, n, scratch, 0);
            line.setLength(0);
            endLine(scratch, 0, n);
        }

        private void reportTooLong(CharSequence start) {
            bad++;
            report(
                    problems,
                    AnomalyKind.INVALID_INPUT,
                    label,
                    lineNo,
                    start,
                    () -> "line is longer than " + maxLineChars + " characters: skipped");
        }

        /**
         * The common case of {@link #endLine(char[], int, int)}: a line that starts at {@code off} in {@code src},
         * ends with a newline before {@code n} and is an event the streamed reader reads, parsed without finding its
         * end first. Returns the index after its newline, or -1 (nothing read, nothing counted) for any other line.
         */
        int lineInBuffer(char[] src, int off, int n) {
            // A line of at most maxLineChars characters has its newline before off + maxLineChars + 1.
            ServiceEvent e = streamedLine.readLine(src, off, (int) Math.min(n, (long) off + maxLineChars + 1));
            if (e == null) {
                return -1;
            }
            int newline = streamedLine.lineEnd();
            lineNo++;
            accept(e, src, off, newline - off);
            return newline + 1;
        }

        /** A whole line, {@code len} characters of {@code src} from {@code off} (without its newline). */
        void endLine(char[] src, int off, int len) {
            lineNo++;
            if (len > maxLineChars) {
                reportTooLong(CharBuffer.wrap(src, off, maxLineChars));
                return;
            }
            int first = firstNonBlank(src, off, len);
            if (first < 0) {
                return;
            }
            if (src[first] != '{') {
                // Cheap and common in garbage: no JSON parser (and no exception) for a line that is no object.
                bad++;
                report(
                        problems,
                        AnomalyKind.INVALID_JSON,
                        label,
                        lineNo,
                        CharBuffer.wrap(src, off, len),
                        () -> "not a JSON object (it" + " must start with '{')");
                return;
            }
            ServiceEvent streamed = streamedLine.read(src, off, len);
            if (streamed != null) {
                accept(streamed, src, off, len);
                return;
            }
            String text = new String(src, off, len).strip();
            try {
                events.accept(parseTree(text));
                ok++;
            } catch (IllegalArgumentException e) {
                rejected(e, text);
            }
        }

        /** An event the streamed reader read from the line ({@code len} characters of {@code src} from {@code off}). */
        private void accept(ServiceEvent event, char[] src, int off, int len) {
            try {
                events.accept(event);
                ok++;
            } catch (IllegalArgumentException e) {
                rejected(e, CharBuffer.wrap(src, off, len));
            }
        }

        private void rejected(IllegalArgumentException e, CharSequence line) {
            bad++;
            AnomalyKind kind = e.getCause() instanceof JsonProcessingException
                    ? AnomalyKind.INVALID_JSON
                    : AnomalyKind.INVALID_INPUT;
            report(problems, kind, label, lineNo, line, e::getMessage);
        }
    }

    /** The index of the first newline in {@code buf} from {@code from} before {@code n}, or -1. */
    private static int indexOfNewline(char[] buf, int from, int n) {
        for (int i = from; i < n; i++) {
            if (buf[i] == '\n') {
                return i;
            }
        }
        return -1;
    }

    private static void report(
            Problems problems,
            AnomalyKind kind,
            String label,
            long lineNo,
            CharSequence line,
            java.util.function.Supplier<String> what) {
        if (!problems.wantsDetail()) {
            problems.counted(kind);
            return;
        }
        String text = line.toString().strip();
        problems.bad(
                new InputProblem(
                        kind,
                        label,
                        lineNo,
                        "line " + lineNo + ": " + what.get(),
                        text.substring(0, Math.min(80, text.length()))),
                text);
    }

    /** The index in {@code s} of the first non-blank character of the range, or -1. */
    private static int firstNonBlank(char[] s, int off, int len) {
        for (int i = off; i < off + len; i++) {
            if (!Character.isWhitespace(s[i])) {
                return i;
            }
        }
        return -1;
    }

    /** One line. @throws IllegalArgumentException with what is wrong (cause: the JSON error, if any) */
    public static ServiceEvent parse(String line) {
        ServiceEvent fast = StreamedLine.read(line);
        return fast != null ? fast : parseTree(line);
    }

    /**
     * One line through Jackson's tree model: every shape the format allows, and the messages for what is wrong.
     * {@link #parse} reads the common shapes without the tree ({@link StreamedLine}) and comes here for the rest.
     */
    static ServiceEvent parseTree(String line) {
        JsonNode n;
        try {
            n = TREE.readTree(line);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage(), e);
        }
        if (n == null || !n.isObject()) {
            throw new IllegalArgumentException("not a JSON object");
        }
        JsonNode v = n.get("v");
        if (v != null && !(v.canConvertToInt() && v.asInt() == VERSION)) {
            throw new IllegalArgumentException(
                    "format version " + v + " is not supported (this build reads " + VERSION + ")");
        }
        long ts = requiredLong(n, "ts_ns");
        Long dur = optionalLong(n, "dur_ns");
        if (dur != null && dur < 0) {
            throw new IllegalArgumentException("negative dur_ns " + dur);
        }
        JsonNode name = n.get("name");
        if (name == null || !name.isTextual() || name.asText().isEmpty()) {
            throw new IllegalArgumentException("no name");
        }
        ObjectNode attributes = Json.mapper().createObjectNode();
        for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            if (!RESERVED.contains(f.getKey())) {
                attributes.set(f.getKey(), f.getValue());
            }
        }
        JsonNode domain = n.get("domain");
        JsonNode tid = n.get("tid");
        return ServiceAttributes.of(attributes)
                .event(
                        domain == null || domain.isNull() ? "" : domain.asText(),
                        name.asText(),
                        ts,
                        dur,
                        optionalLong(n, "pid"),
                        tid == null || tid.isNull() ? null : tid.asText());
    }

    /** The line for an event (no newline); {@link #parse} reads it back equal. */
    public static String write(ServiceEvent e) {
        ObjectNode n = Json.mapper().createObjectNode();
        n.put("v", VERSION);
        n.put("ts_ns", e.startNs());
        if (e.durNs() != null) {
            n.put("dur_ns", e.durNs());
        }
        n.put("name", e.name());
        n.put("domain", e.domain());
        if (e.pid() != null) {
            n.put("pid", e.pid());
        }
        if (e.tid() != null) {
            n.put("tid", e.tid());
        }
        return ServiceAttributes.put(e, n).toString();
    }

    private static long requiredLong(JsonNode n, String key) {
        Long v = optionalLong(n, key);
        if (v == null) {
            throw new IllegalArgumentException("no " + key);
        }
        return v;
    }

    private static Long optionalLong(JsonNode n, String key) {
        JsonNode v = n.get(key);
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isIntegralNumber() && v.canConvertToLong()) {
            return v.asLong();
        }
        if (v.isNumber()) {
            return Math.round(v.doubleValue());
        }
        throw new IllegalArgumentException(key + " is not a number: " + v);
    }
}
