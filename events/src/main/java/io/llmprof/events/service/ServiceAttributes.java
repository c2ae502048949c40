package io.llmprof.events.service;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

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
        List<RequestRef> requests = new java.util.ArrayList<>();
        Map<String, Double> metrics = new LinkedHashMap<>();
        Map<String, Double> deltas = new LinkedHashMap<>();
        Map<String, String> labels = new LinkedHashMap<>();
        if (attributes != null && attributes.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = attributes.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> f = it.next();
                String key = f.getKey();
                JsonNode v = f.getValue();
                if (v == null || v.isNull()) {
                    continue;
                }
                if (RID_KEYS.contains(key)) {
                    requests.addAll(RequestIds.parse(v));
                    continue;
                }
                Double number = number(v);
                if (key.length() > 1 && key.endsWith("=") && number != null) {
                    metrics.put(key.substring(0, key.length() - 1), number);
                } else if (key.length() > 1 && key.startsWith("=") && number != null) {
                    metrics.put(key.substring(1), number); // tx_data_df.csv's spelling: =QueueSize
                } else if (key.length() > 1 && key.endsWith("+") && number != null) {
                    deltas.put(key.substring(0, key.length() - 1), number);
                } else if (key.length() > 1 && key.startsWith("+") && number != null) {
                    deltas.put(key.substring(1), number); // +WAITING
                } else {
                    labels.put(key, v.isValueNode() ? v.asText() : v.toString());
                }
            }
        }
        return new ServiceAttributes(requests, metrics, deltas, labels);
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
            try {
                return Double.valueOf(v.asText().strip());
            } catch (NumberFormatException e) {
                return null;
            }
        }
        if (v.isBoolean()) {
            return v.booleanValue() ? 1.0 : 0.0;
        }
        return null;
    }
}
