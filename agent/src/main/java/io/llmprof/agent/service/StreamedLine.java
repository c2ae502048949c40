package io.llmprof.agent.service;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.llmprof.events.Json;
import io.llmprof.events.service.RequestIds;
import io.llmprof.events.service.ServiceAttributes;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;

/**
 * The common shapes of a service-event line read with Jackson's streaming parser, without building a tree: the
 * reserved keys as plain values, attributes as strings, numbers or booleans, {@code rid} as a string or a list of
 * strings and flat {@code {rid, iter, type, num_scheduled_tokens=}} objects. Anything else (a duplicate key, a
 * nested label, a number where text is expected, a bad value, trailing tokens, a syntax error) gives null, and the
 * caller reads the line through the tree ({@link ServiceJsonLines#parseTree}), which has every rule and every
 * message: both give the same event for any line this class reads (ServiceJsonLinesFastPathTest).
 */
final class StreamedLine {
    private static final JsonFactory FACTORY = Json.mapper().getFactory();
    /** More keys than this in one object: the tree reads it (the duplicate check is a linear scan). */
    private static final int MAX_KEYS = 32;

    private final JsonParser p;
    private final String[] keys = new String[MAX_KEYS];
    private int keyCount;

    private StreamedLine(JsonParser p) {
        this.p = p;
    }

    /** The event of {@code line}, or null when the tree reader must read it. */
    static ServiceEvent read(String line) {
        char[] chars = line.toCharArray();
        return read(chars, 0, chars.length);
    }

    /** The event of the line in {@code len} characters of {@code src} from {@code off}, or null (as above). */
    static ServiceEvent read(char[] src, int off, int len) {
        try (JsonParser p = FACTORY.createParser(src, off, len)) {
            return new StreamedLine(p).event();
        } catch (IOException | RuntimeException e) {
            return null; // the tree reader says what is wrong, with its message
        }
    }

    private ServiceEvent event() throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            return null;
        }
        boolean hasTs = false;
        long ts = 0;
        Long dur = null;
        String name = null;
        String domain = "";
        Long pid = null;
        String tid = null;
        ServiceAttributes.Builder attributes = new ServiceAttributes.Builder();
        JsonToken t;
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            String key = p.currentName();
            if (!firstTime(key)) {
                return null;
            }
            JsonToken v = p.nextToken();
            switch (key) {
                case "v" -> {
                    if (v != JsonToken.VALUE_NUMBER_INT
                            || p.getNumberType() != JsonParser.NumberType.INT
                            || p.getIntValue() != ServiceJsonLines.VERSION) {
                        return null;
                    }
                }
                case "ts_ns" -> {
                    Long l = plainLong(v);
                    if (l == null) {
                        return null;
                    }
                    ts = l;
                    hasTs = true;
                }
                case "dur_ns" -> {
                    if (v != JsonToken.VALUE_NULL) {
                        dur = plainLong(v);
                        if (dur == null || dur < 0) {
                            return null;
                        }
                    }
                }
                case "name" -> {
                    if (v != JsonToken.VALUE_STRING || p.getTextLength() == 0) {
                        return null;
                    }
                    name = p.getText();
                }
                case "domain" -> {
                    if (v == JsonToken.VALUE_STRING) {
                        domain = p.getText();
                    } else if (v != JsonToken.VALUE_NULL) {
                        return null;
                    }
                }
                case "pid" -> {
                    if (v != JsonToken.VALUE_NULL) {
                        pid = plainLong(v);
                        if (pid == null) {
                            return null;
                        }
                    }
                }
                case "tid" -> {
                    if (v == JsonToken.VALUE_STRING) {
                        tid = p.getText();
                    } else if (v != JsonToken.VALUE_NULL) {
                        return null;
                    }
                }
                default -> {
                    if (!attribute(key, v, attributes)) {
                        return null;
                    }
                }
            }
        }
        if (t != JsonToken.END_OBJECT || p.nextToken() != null || !hasTs || name == null) {
            return null;
        }
        ServiceAttributes a = attributes.build();
        return new ServiceEvent(domain, name, ts, dur, pid, tid, a.requests(), a.metrics(), a.deltas(), a.labels());
    }

    /** Whether {@code key} is new in the current object (the tree keeps a repeated key's last value). */
    private boolean firstTime(String key) {
        for (int i = 0; i < keyCount; i++) {
            if (keys[i].equals(key)) {
                return false;
            }
        }
        if (keyCount == MAX_KEYS) {
            return false;
        }
        keys[keyCount++] = key;
        return true;
    }

    /** An integer that fits a long (a big integer or a fraction: null, the tree's rules then apply). */
    private Long plainLong(JsonToken v) throws IOException {
        if (v != JsonToken.VALUE_NUMBER_INT || p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
            return null;
        }
        return p.getLongValue();
    }

    private boolean attribute(String key, JsonToken v, ServiceAttributes.Builder out) throws IOException {
        if (v == JsonToken.VALUE_NULL) {
            return true; // as the tree: a null attribute is no attribute
        }
        if (ServiceAttributes.RID_KEYS.contains(key)) {
            if (v == JsonToken.VALUE_STRING) {
                out.requests(RequestIds.parse(p.getText()));
                return true;
            }
            return v == JsonToken.START_ARRAY && ridList(out);
        }
        switch (v) {
            case VALUE_STRING -> {
                String text = p.getText();
                out.value(key, ServiceAttributes.number(text), text);
                return true;
            }
            case VALUE_TRUE, VALUE_FALSE -> {
                boolean b = v == JsonToken.VALUE_TRUE;
                out.value(key, b ? 1.0 : 0.0, Boolean.toString(b));
                return true;
            }
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> {
                if (!metricOrDelta(key) || p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                    return false; // a number as a label is the tree's text of the number
                }
                out.value(key, p.getDoubleValue(), null);
                return true;
            }
            default -> {
                return false; // an object or a list as a label: its JSON, from the tree
            }
        }
    }

    /** The keys {@link ServiceAttributes.Builder#value} files under metrics or deltas when their value is a number. */
    private static boolean metricOrDelta(String key) {
        if (key.length() < 2) {
            return false;
        }
        char first = key.charAt(0);
        char last = key.charAt(key.length() - 1);
        return last == '=' || last == '+' || first == '=' || first == '+';
    }

    /** A {@code rid} list: strings and flat request objects (after its START_ARRAY, through its END_ARRAY). */
    private boolean ridList(ServiceAttributes.Builder out) throws IOException {
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            if (t == JsonToken.VALUE_STRING) {
                out.requests(RequestIds.parse(p.getText()));
            } else if (t == JsonToken.START_OBJECT) {
                if (!ridObject(out)) {
                    return false;
                }
            } else if (t != JsonToken.VALUE_NULL) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code {"rid": "...", "iter": N, "type": "...", "num_scheduled_tokens=": N}}, each key at most once and in
     * one spelling, {@code rid} a string, the numbers integers: one request, as the tree reads it.
     */
    private boolean ridObject(ServiceAttributes.Builder out) throws IOException {
        String rid = null;
        Long iter = null;
        String type = null;
        Long tokens = null;
        boolean ridSeen = false;
        boolean iterSeen = false;
        boolean typeSeen = false;
        boolean tokensSeen = false;
        JsonToken t;
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            String key = p.currentName();
            JsonToken v = p.nextToken();
            switch (key) {
                case "rid" -> {
                    if (ridSeen || v != JsonToken.VALUE_STRING) {
                        return false;
                    }
                    ridSeen = true;
                    rid = p.getText();
                }
                case "iter" -> {
                    if (iterSeen) {
                        return false;
                    }
                    iterSeen = true;
                    if (v != JsonToken.VALUE_NULL && (iter = plainLong(v)) == null) {
                        return false;
                    }
                }
                case "type" -> {
                    if (typeSeen) {
                        return false;
                    }
                    typeSeen = true;
                    if (v == JsonToken.VALUE_STRING) {
                        type = p.getText();
                    } else if (v != JsonToken.VALUE_NULL) {
                        return false;
                    }
                }
                case "num_scheduled_tokens", "num_scheduled_tokens=", "num_scheduled_tokens+" -> {
                    if (tokensSeen) {
                        return false;
                    }
                    tokensSeen = true;
                    if (v != JsonToken.VALUE_NULL && (tokens = plainLong(v)) == null) {
                        return false;
                    }
                }
                default -> {
                    return false; // another key (or another spelling of these): the tree's rules
                }
            }
        }
        if (t != JsonToken.END_OBJECT || !ridSeen) {
            return false;
        }
        out.request(RequestIds.ref(rid, iter, type, tokens));
        return true;
    }
}
