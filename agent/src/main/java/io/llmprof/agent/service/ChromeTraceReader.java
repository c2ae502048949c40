package io.llmprof.agent.service;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.Json;
import io.llmprof.events.service.ServiceAttributes;
import io.llmprof.events.service.ServiceEvent;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import java.util.function.Consumer;
import java.util.zip.GZIPInputStream;

/**
 * msServiceProfiler's {@code chrome_tracing.json} (or {@code .json.gz}; {@code {"traceEvents": [...]}} or a bare
 * array), streamed with Jackson: one event in memory at a time plus a bounded reorder buffer.
 *
 * <ul>
 *   <li>{@code ph:"X"}: an event with its duration; {@code cat} is the domain, {@code args} the attributes (null
 *       values dropped, {@code rid} as {@code "0"} or {@code 0.0} is one request);
 *   <li>{@code ph:"C"}: a counter: an event whose numeric args are metrics;
 *   <li>{@code ph:"i"/"I"/"R"/"n"}: an instant event;
 *   <li>flows ({@code s/t/f}), metadata ({@code M}) and anything else: skipped, counted.
 * </ul>
 *
 * {@code ts}/{@code dur} are µs (floats with ns fractions; parsed from their text, exact to the ns). String tids
 * are kept as text; a pid that is not a number is null.
 */
public final class ChromeTraceReader {
    /** Events held to restore start order. */
    public static final int DEFAULT_REORDER_WINDOW = 65_536;

    /**
     * What a read gave.
     *
     * @param events events emitted
     * @param flows flow events (s/t/f) skipped
     * @param metadata metadata events (M) skipped
     * @param other other phases skipped (B/E, async, ...)
     * @param late events that arrived later than the reorder window allowed (emitted out of order)
     * @param problems bad events reported
     */
    public record Summary(long events, long flows, long metadata, long other, long late, long problems) {}

    private ChromeTraceReader() {}

    public static Summary read(Path file, Consumer<ServiceEvent> events, Consumer<InputProblem> problems)
            throws IOException {
        return read(file, DEFAULT_REORDER_WINDOW, events, problems);
    }

    public static Summary read(
            Path file, int reorderWindow, Consumer<ServiceEvent> events, Consumer<InputProblem> problems)
            throws IOException {
        try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16);
                InputStream in =
                        file.getFileName().toString().endsWith(".gz") ? new GZIPInputStream(raw, 1 << 16) : raw) {
            return new Session(file.toString(), reorderWindow, events, problems).run(in);
        }
    }

    private static final class Session {
        private final String label;
        private final ReorderBuffer buffer;
        private final Consumer<InputProblem> problems;
        private long flows;
        private long metadata;
        private long other;
        private long bad;

        Session(String label, int window, Consumer<ServiceEvent> events, Consumer<InputProblem> problems) {
            this.label = label;
            this.buffer = new ReorderBuffer(window, events);
            this.problems = problems;
        }

        Summary run(InputStream in) throws IOException {
            try (JsonParser p = Json.mapper().getFactory().createParser(in)) {
                JsonToken t = p.nextToken();
                if (t == JsonToken.START_OBJECT) {
                    while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                        String field = p.currentName();
                        t = p.nextToken();
                        if ("traceEvents".equals(field) && t == JsonToken.START_ARRAY) {
                            array(p);
                        } else {
                            p.skipChildren();
                        }
                    }
                } else if (t == JsonToken.START_ARRAY) {
                    array(p);
                } else if (t != null) {
                    report(AnomalyKind.INVALID_INPUT, p.currentLocation().getCharOffset(), "not a trace: " + t, "");
                }
            } catch (JsonProcessingException e) {
                report(
                        AnomalyKind.INVALID_JSON,
                        e.getLocation() == null ? -1 : e.getLocation().getCharOffset(),
                        "JSON error, the rest of the file is lost: " + e.getOriginalMessage(),
                        "");
            }
            buffer.flush();
            return new Summary(buffer.emitted(), flows, metadata, other, buffer.late(), bad);
        }

        private void array(JsonParser p) throws IOException {
            JsonToken t;
            while ((t = p.nextToken()) != JsonToken.END_ARRAY && t != null) {
                long position = p.currentLocation().getCharOffset();
                if (t != JsonToken.START_OBJECT) {
                    p.skipChildren();
                    report(AnomalyKind.INVALID_INPUT, position, "trace event is not an object", "");
                    continue;
                }
                event(p, position);
            }
        }

        private void event(JsonParser p, long position) throws IOException {
            String name = null;
            String ph = null;
            String cat = null;
            Long pid = null;
            String tid = null;
            String ts = null;
            String dur = null;
            JsonNode args = null;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String f = p.currentName();
                JsonToken v = p.nextToken();
                switch (f) {
                    case "name" -> name = scalar(p, v);
                    case "ph" -> ph = scalar(p, v);
                    case "cat" -> cat = scalar(p, v);
                    case "pid" -> pid = v.isNumeric() ? Long.valueOf(p.getLongValue()) : longOf(scalar(p, v));
                    case "tid" -> tid = scalar(p, v);
                    case "ts" -> ts = v.isNumeric() ? p.getText() : scalar(p, v);
                    case "dur" -> dur = v.isNumeric() ? p.getText() : scalar(p, v);
                    case "args" -> args = v == JsonToken.START_OBJECT ? p.readValueAsTree() : skip(p);
                    default -> p.skipChildren();
                }
            }
            if (ph == null) {
                report(AnomalyKind.INVALID_INPUT, position, "event without ph: skipped", String.valueOf(name));
                return;
            }
            switch (ph) {
                case "s", "t", "f" -> {
                    flows++;
                    return;
                }
                case "M" -> {
                    metadata++;
                    return;
                }
                case "X", "C", "i", "I", "R", "n" -> {
                    // below
                }
                default -> {
                    other++;
                    return;
                }
            }
            Long tsNs = nanos(ts);
            if (tsNs == null) {
                report(AnomalyKind.MISSING_TS, position, "event " + name + " without a numeric ts: skipped", "");
                return;
            }
            Long durNs = null;
            if ("X".equals(ph)) {
                durNs = dur == null ? Long.valueOf(0) : nanos(dur);
                if (durNs == null || durNs < 0) {
                    report(AnomalyKind.NEGATIVE_DURATION, position, "event " + name + " dur " + dur + ": skipped", "");
                    return;
                }
            }
            ObjectNode attributes =
                    args instanceof ObjectNode o ? o : Json.mapper().createObjectNode();
            String n = name == null ? "" : name;
            if ("C".equals(ph)) {
                buffer.accept(counter(cat, n, tsNs, pid, tid, attributes));
                return;
            }
            buffer.accept(ServiceAttributes.of(attributes).event(cat, n, tsNs, durNs, pid, tid));
        }

        /** A counter's numeric args are metrics under their own names (no {@code =} needed). */
        private static ServiceEvent counter(String cat, String name, long ts, Long pid, String tid, ObjectNode args) {
            ObjectNode converted = Json.mapper().createObjectNode();
            for (Iterator<Map.Entry<String, JsonNode>> it = args.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> f = it.next();
                String key = f.getKey();
                boolean plain =
                        !key.endsWith("=") && !key.startsWith("=") && !key.endsWith("+") && !key.startsWith("+");
                converted.set(f.getValue().isNumber() && plain ? key + "=" : key, f.getValue());
            }
            return ServiceAttributes.of(converted).event(cat, name, ts, null, pid, tid);
        }

        private static JsonNode skip(JsonParser p) throws IOException {
            p.skipChildren();
            return null;
        }

        private static String scalar(JsonParser p, JsonToken v) throws IOException {
            if (v == JsonToken.START_OBJECT || v == JsonToken.START_ARRAY) {
                p.skipChildren();
                return null;
            }
            return v == JsonToken.VALUE_NULL ? null : p.getText();
        }

        private static Long longOf(String s) {
            if (s == null) {
                return null;
            }
            try {
                return Long.parseLong(s.strip());
            } catch (NumberFormatException e) {
                return null;
            }
        }

        /** µs text to ns, exact (epoch µs with ns fractions do not fit a double). */
        private static Long nanos(String micros) {
            if (micros == null) {
                return null;
            }
            try {
                return new BigDecimal(micros.strip())
                        .movePointRight(3)
                        .setScale(0, RoundingMode.HALF_EVEN)
                        .longValueExact();
            } catch (NumberFormatException | ArithmeticException e) {
                return null;
            }
        }

        private void report(AnomalyKind kind, long position, String message, String raw) {
            bad++;
            problems.accept(new InputProblem(kind, label, Math.max(0, position), message, raw));
        }
    }
}
