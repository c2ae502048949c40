package io.llmprof.events.service;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * Request ids as serving frameworks really send them in a {@code rid} attribute (ANALYSIS.md section 1):
 *
 * <ul>
 *   <li>a scalar: {@code "0"}, {@code 0}, {@code 0.0} (msServiceProfiler's chrome trace writes the same request
 *       as {@code "0"} and {@code 0.0});
 *   <li>a list of ids: {@code [1, 2, 3]};
 *   <li>a list of objects {@code {rid, iter, type, num_scheduled_tokens=}} (batch events of newer MindIE and
 *       vLLM-Ascend; the key may carry the {@code =} of the absolute-metric convention or not);
 *   <li>any of those as text: JSON, msServiceProfiler's mstx form with {@code ^} standing for {@code "}, or
 *       Python literal text with single quotes;
 *   <li>newer vLLM ids with a hash suffix, {@code <rid>-<8 hex>}: the canonical id drops it.
 * </ul>
 *
 * Nothing here throws on bad input: what cannot be read as ids is one id, the text itself.
 */
public final class RequestIds {
    private RequestIds() {}

    /** The requests of a {@code rid} attribute value (a parsed JSON value); empty for null or an empty list. */
    public static List<RequestRef> parse(JsonNode value) {
        List<RequestRef> out = new ArrayList<>();
        add(value, out);
        return out;
    }

    /**
     * The requests of a {@code rid} attribute given as text (JSON, mstx {@code ^} form, Python literal, or an id); a
     * single id's list is immutable.
     */
    public static List<RequestRef> parse(String text) {
        if (text == null) {
            return List.of();
        }
        String t = text.strip();
        if (t.isEmpty()) {
            return List.of();
        }
        if (t.startsWith("[") || t.startsWith("{")) {
            JsonNode node = readLenient(t);
            if (node != null) {
                return parse(node);
            }
        }
        return List.of(ref(t, null, null, null));
    }

    /** The canonical form of one id: integral numbers without fraction, the vLLM hash suffix removed. */
    public static String canonical(String rid) {
        String r = rid.strip();
        if (r.length() >= 2 && (r.charAt(0) == '"' || r.charAt(0) == '\'') && r.charAt(r.length() - 1) == r.charAt(0)) {
            r = r.substring(1, r.length() - 1);
        }
        String number = integral(r);
        if (number != null) {
            return number;
        }
        String head = withoutHashSuffix(r);
        if (head != null && hasNonHexBeforeSuffix(head)) {
            return head;
        }
        return r;
    }

    /**
     * What {@code ^(.+)-[0-9a-fA-F]{8}$} captures of {@code r}, or null when it does not match: the suffix is the
     * last 9 characters, so no regex is needed (through it, the agent's read of events whose ids are not numbers took
     * about 1.6 times the CPU: docs/benchmarks.md). {@code .} takes no line terminator, so a head holding one does not
     * match, as with the regex.
     */
    static String withoutHashSuffix(String r) {
        int dash = r.length() - 9;
        if (dash < 1 || r.charAt(dash) != '-') {
            return null;
        }
        for (int i = dash + 1; i < r.length(); i++) {
            if (!HexFormat.isHexDigit(r.charAt(i))) { // exactly [0-9a-fA-F]
                return null;
            }
        }
        for (int i = 0; i < dash; i++) {
            char c = r.charAt(i);
            if (c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029') {
                return null;
            }
        }
        return r.substring(0, dash);
    }

    private static void add(JsonNode v, List<RequestRef> out) {
        if (v == null || v.isNull() || v.isMissingNode()) {
            return;
        }
        if (v.isArray()) {
            for (JsonNode item : v) {
                add(item, out);
            }
            return;
        }
        if (v.isObject()) {
            JsonNode rid = field(v, "rid");
            if (rid == null || rid.isNull()) {
                return;
            }
            if (rid.isArray()) {
                add(rid, out);
                return;
            }
            out.add(ref(
                    text(rid),
                    longOf(field(v, "iter")),
                    textOrNull(field(v, "type")),
                    longOf(field(v, "num_scheduled_tokens"))));
            return;
        }
        if (v.isTextual()) {
            out.addAll(parse(v.asText()));
            return;
        }
        out.add(ref(text(v), null, null, null));
    }

    /** One request as a {@code rid} object gives it: {@code raw} as written, its canonical id from {@link #canonical}. */
    public static RequestRef ref(String raw, Long iter, String type, Long tokens) {
        return new RequestRef(canonical(raw), raw, iter, type, tokens);
    }

    /** A field by name, also under the {@code name=} / {@code name+} spellings of the attribute conventions. */
    private static JsonNode field(JsonNode o, String name) {
        JsonNode v = o.get(name);
        if (v == null) {
            v = o.get(name + "=");
        }
        if (v == null) {
            v = o.get(name + "+");
        }
        return v;
    }

    private static String text(JsonNode v) {
        if (v.isNumber()) {
            String n = integral(v.decimalValue().toPlainString());
            return n != null ? n : v.asText();
        }
        return v.asText();
    }

    private static String textOrNull(JsonNode v) {
        return v == null || v.isNull() ? null : text(v);
    }

    private static Long longOf(JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isNumber()) {
            return v.asLong();
        }
        String n = integral(v.asText().strip());
        return n == null ? null : Long.parseLong(n);
    }

    /** "12", "12.0", "12.000" -> "12"; anything else (fractions, text, huge values) -> null. */
    private static String integral(String s) {
        if (s.isEmpty() || s.length() > 40) {
            return null;
        }
        char c = s.charAt(0);
        if (!(Character.isDigit(c) || (c == '-' && s.length() > 1))) {
            return null;
        }
        int start = c == '-' ? 1 : 0;
        boolean plain = true;
        for (int i = start; i < s.length() && plain; i++) {
            plain = s.charAt(i) >= '0' && s.charAt(i) <= '9';
        }
        if (plain) {
            // The common case, without BigDecimal: an ASCII integer is its own canonical form less leading zeros.
            int k = start;
            while (k < s.length() - 1 && s.charAt(k) == '0') {
                k++;
            }
            String digits = s.substring(k);
            return digits.equals("0") ? "0" : (start == 1 ? "-" + digits : digits);
        }
        try {
            BigDecimal d = new BigDecimal(s);
            BigDecimal stripped = d.stripTrailingZeros();
            if (stripped.scale() > 0) {
                return null;
            }
            return stripped.toBigIntegerExact().toString();
        } catch (NumberFormatException | ArithmeticException e) {
            return null;
        }
    }

    /** A hash suffix only counts when what precedes it is not itself all hex (a UUID's last group is 12 hex). */
    private static boolean hasNonHexBeforeSuffix(String head) {
        for (int i = 0; i < head.length(); i++) {
            if (Character.digit(head.charAt(i), 16) < 0 && head.charAt(i) != '-') {
                return true;
            }
        }
        return false;
    }

    /** JSON, else the mstx form ({@code ^} for {@code "}), else Python literal text; null when none parses. */
    private static JsonNode readLenient(String t) {
        for (String candidate : new String[] {t, t.replace('^', '"'), python(t)}) {
            try {
                return Json.mapper().readTree(candidate);
            } catch (JsonProcessingException e) {
                // try the next spelling
            }
        }
        return null;
    }

    /** Python literal to JSON: single-quoted strings, None/True/False. Good enough for rid lists and dicts. */
    private static String python(String t) {
        StringBuilder b = new StringBuilder(t.length());
        boolean inSingle = false;
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            if (c == '\'') {
                inSingle = !inSingle;
                b.append('"');
            } else if (c == '"' && inSingle) {
                b.append("\\\"");
            } else if (!inSingle && t.startsWith("None", i)) {
                b.append("null");
                i += 3;
            } else if (!inSingle && t.startsWith("True", i)) {
                b.append("true");
                i += 3;
            } else if (!inSingle && t.startsWith("False", i)) {
                b.append("false");
                i += 4;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}
