package io.llmprof.events.service;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.events.ImmutableLists;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Splits an event's attribute object by msServiceProfiler's conventions (ANALYSIS.md section 1): {@code X=}
 * absolute metric, {@code X+} increment, {@code scope#X} label, {@code rid} request id(s). A metric whose value is
 * not a number (nor numeric text) is kept as a label under its full key, never dropped. Null values are skipped.
 *
 * @param requests from {@code rid} (and {@code rid_list}, {@code rids})
 * @param metrics {@code X=} attributes by {@code X}
 * @param deltas {@code X+} attributes by {@code X}
 * @param labels every other attribute as text, by its full key
 */
public record ServiceAttributes(
        List<RequestRef> requests,
        Map<String, Double> metrics,
        Map<String, Double> deltas,
        Map<String, String> labels) {
    /** Attribute keys that carry request ids. */
    public static final List<String> RID_KEYS = List.of("rid", "rid_list", "rids");

    public static ServiceAttributes of(JsonNode attributes) {
        Builder b = new Builder();
        if (attributes != null && attributes.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = attributes.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> f = it.next();
                String key = f.getKey();
                JsonNode v = f.getValue();
                if (v == null || v.isNull()) {
                    continue;
                }
                if (RID_KEYS.contains(key)) {
                    b.requests(RequestIds.parse(v));
                    continue;
                }
                b.value(key, number(v), v.isValueNode() ? v.asText() : v.toString());
            }
        }
        return b.build();
    }

    /** The event these attributes belong to: every reader's one way of making a {@link ServiceEvent} from them. */
    public ServiceEvent event(String domain, String name, long startNs, Long durNs, Long pid, String tid) {
        return new ServiceEvent(domain, name, startNs, durNs, pid, tid, requests, metrics, deltas, labels);
    }

    /**
     * The attributes of one event, added in document order: what {@link #of} does with an object's fields, for a
     * reader that streams them (one rule for both).
     */
    public static final class Builder {
        // Made on first use: most events have requests and one metric at most (fewer objects per event read).
        private Map<String, Double> metrics;
        private Map<String, Double> deltas;
        private Map<String, String> labels;

        /** Requests gathered (kept, emptied, for the next event when the builder is reused). */
        private RequestRef[] refs;

        private int refCount;

        /** The requests of a {@link #RID_KEYS} attribute. */
        public void requests(List<RequestRef> list) {
            for (int i = 0; i < list.size(); i++) {
                add(list.get(i));
            }
        }

        /** One request of a {@link #RID_KEYS} attribute. */
        public void request(RequestRef ref) {
            add(ref);
        }

        private void add(RequestRef ref) {
            if (refs == null) {
                refs = new RequestRef[16];
            } else if (refCount == refs.length) {
                refs = Arrays.copyOf(refs, refCount * 2);
            }
            refs[refCount++] = Objects.requireNonNull(ref, "request");
        }

        /** The requests, as an immutable list. */
        private List<RequestRef> requestList() {
            return ImmutableLists.firstN(refs, refCount);
        }

        /**
         * Any other non-null attribute: {@code number} its numeric reading (a number, numeric text, a boolean as 1
         * or 0; null when it has none), {@code text} its text (a value's text, else its JSON).
         */
        public void value(String key, Double number, String text) {
            if (key.length() > 1 && key.endsWith("=") && number != null) {
                metrics().put(key.substring(0, key.length() - 1), number);
            } else if (key.length() > 1 && key.startsWith("=") && number != null) {
                metrics().put(key.substring(1), number); // tx_data_df.csv's spelling: =QueueSize
            } else if (key.length() > 1 && key.endsWith("+") && number != null) {
                deltas().put(key.substring(0, key.length() - 1), number);
            } else if (key.length() > 1 && key.startsWith("+") && number != null) {
                deltas().put(key.substring(1), number); // +WAITING
            } else {
                if (labels == null) {
                    labels = new LinkedHashMap<>();
                }
                labels.put(key, text);
            }
        }

        private Map<String, Double> metrics() {
            if (metrics == null) {
                metrics = new LinkedHashMap<>();
            }
            return metrics;
        }

        private Map<String, Double> deltas() {
            if (deltas == null) {
                deltas = new LinkedHashMap<>();
            }
            return deltas;
        }

        /**
         * The event of these attributes, as {@code build().event(...)} makes it, after which the builder is empty and
         * can take the next event's attributes: the event holds copies (a reader reuses one builder per line).
         */
        public ServiceEvent event(String domain, String name, long startNs, Long durNs, Long pid, String tid) {
            try {
                return new ServiceEvent(
                        domain,
                        name,
                        startNs,
                        durNs,
                        pid,
                        tid,
                        requestList(),
                        metrics == null || metrics.isEmpty() ? Map.of() : metrics,
                        deltas == null || deltas.isEmpty() ? Map.of() : deltas,
                        labels == null || labels.isEmpty() ? Map.of() : labels);
            } finally {
                clear();
            }
        }

        /** Empty again (the maps kept, emptied, for the next event). */
        public void clear() {
            if (refCount > 0) {
                Arrays.fill(refs, 0, refCount, null); // no event's requests kept alive by the next one's builder
                refCount = 0;
            }
            if (metrics != null) {
                metrics.clear();
            }
            if (deltas != null) {
                deltas.clear();
            }
            if (labels != null) {
                labels.clear();
            }
        }

        /** The attributes; the builder then gives them away and is not to be used again. */
        public ServiceAttributes build() {
            return new ServiceAttributes(
                    requestList(),
                    metrics == null ? Map.of() : metrics,
                    deltas == null ? Map.of() : deltas,
                    labels == null ? Map.of() : labels);
        }
    }

    /** The numeric reading of text, as {@link #of} reads a text attribute: the stripped text as a double, or null. */
    public static Double number(String text) {
        String t = text.strip();
        int k = 0;
        while (k < t.length() && t.charAt(k) <= ' ') {
            k++; // Double.valueOf trims these too
        }
        if (k == t.length() || !mayStartNumber(t.charAt(k))) {
            return null; // most labels: no exception thrown and caught for them
        }
        try {
            return Double.valueOf(t);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Whether {@code c} can start what {@link Double#valueOf(String)} reads (NaN and Infinity included). */
    private static boolean mayStartNumber(char c) {
        return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'N' || c == 'I';
    }

    /**
     * The inverse of {@link #of}: puts an event's attributes into {@code n} as msServiceProfiler writes them:
     * {@code rid} (a scalar for one plain request, else a list of {@code {rid, iter, type,
     * num_scheduled_tokens=}}), {@code X=} metrics, {@code X+} deltas, labels. {@code of} reads them back equal.
     */
    public static ObjectNode put(ServiceEvent e, ObjectNode n) {
        if (e.requests().size() == 1 && plain(e.requests().get(0))) {
            n.put("rid", e.requests().get(0).rawRid());
        } else if (!e.requests().isEmpty()) {
            ArrayNode rids = n.putArray("rid");
            for (RequestRef r : e.requests()) {
                ObjectNode o = rids.addObject();
                o.put("rid", r.rawRid());
                if (r.iter() != null) {
                    o.put("iter", r.iter());
                }
                if (r.type() != null) {
                    o.put("type", r.type());
                }
                if (r.scheduledTokens() != null) {
                    o.put("num_scheduled_tokens=", r.scheduledTokens());
                }
            }
        }
        e.metrics().forEach((k, v) -> n.put(k + "=", v));
        e.deltas().forEach((k, v) -> n.put(k + "+", v));
        e.labels().forEach(n::put);
        return n;
    }

    private static boolean plain(RequestRef r) {
        return r.iter() == null && r.type() == null && r.scheduledTokens() == null;
    }

    private static Double number(JsonNode v) {
        if (v.isNumber()) {
            return v.doubleValue();
        }
        if (v.isTextual()) {
            return number(v.asText());
        }
        if (v.isBoolean()) {
            return v.booleanValue() ? 1.0 : 0.0;
        }
        return null;
    }
}
