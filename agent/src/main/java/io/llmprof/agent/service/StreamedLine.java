package io.llmprof.agent.service;

import io.llmprof.agent.kineto.StringCache;
import io.llmprof.events.LastBox;
import io.llmprof.events.service.RequestIds;
import io.llmprof.events.service.ServiceAttributes;
import io.llmprof.events.service.ServiceEvent;

/**
 * The common shapes of a service-event line read straight from its characters, without a JSON parser per line: the
 * reserved keys as plain values, attributes as strings, numbers or booleans, {@code rid} as a string or a list of
 * strings and flat {@code {rid, iter, type, num_scheduled_tokens=}} objects. It accepts strict JSON only (the subset
 * Jackson accepts with llmprof's settings, read the same way). Anything else (a duplicate key, a nested label, a
 * number where text is expected, a number of more than {@value #MAX_NUMBER_CHARS} characters, a bad value, trailing
 * tokens, a syntax error) gives null, and the caller reads the line through Jackson's tree ({@link
 * ServiceJsonLines#parseTree}), which has every rule and every message: both give the same event for any line this
 * class reads (ServiceJsonLinesFastPathTest).
 *
 * <p>Per line it allocates the event and its strings only; with a {@link StringCache} the strings a run repeats
 * (keys, names, domains, request ids) are not even built. It used Jackson's streaming parser until a parser per line
 * (its context, symbol table and text buffer) was found to be half of the agent's service read (docs/benchmarks.md).
 */
final class StreamedLine {
    /** More keys than this in one object: the tree reads it (the duplicate check is a linear scan). */
    private static final int MAX_KEYS = 32;
    /**
     * Strings of a service event worth caching are short (keys, names, request ids): a longer one is built each
     * time, so a cache of 1,024 slots holds well under a megabyte whatever the input (an ingest request has one).
     */
    static final int MAX_CACHED_CHARS = 256;

    /** The longest key {@link #knownKey} knows: {@code num_scheduled_tokens=}. */
    private static final int MAX_KNOWN_KEY_CHARS = 21;

    /** A longer number token: the tree (which applies Jackson's limits on numbers). */
    static final int MAX_NUMBER_CHARS = 40;
    /** Powers of ten a double holds exactly: a decimal of at most 15 digits divided by one is correctly rounded. */
    private static final double[] EXACT_POWERS_OF_TEN = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
        1e20, 1e21, 1e22
    };

    /** The line is not one this class reads: the tree reader takes it. No stack trace: it is control flow. */
    private static final class Decline extends RuntimeException {
        Decline() {
            super("declined", null, false, false);
        }
    }

    private static final Decline DECLINE = new Decline();

    private final StringCache strings;
    private char[] s;
    private int end;
    private int i;
    private final String[] keys = new String[MAX_KEYS];
    /** A line's attributes, one builder for every line (the event it makes holds copies). */
    private final ServiceAttributes.Builder lineAttributes = new ServiceAttributes.Builder();
    /** Pids boxed once per run of lines from one process (a Long per line otherwise). */
    private final LastBox pids = new LastBox();

    private int keyCount;
    /**
     * Reading a line where it lies in a read buffer ({@link #readLine}): a newline is not white space but the line's
     * end, which must follow the object.
     */
    private boolean lineMode;

    /** The last number token: integer syntax (no fraction, no exponent), and then whether it fits a long. */
    private boolean numberIsInteger;

    private boolean numberFitsLong;
    private long numberLong;
    private int numberStart;

    /** A reader for the lines of one input, on one thread; {@code strings}, when not null, gives their strings. */
    StreamedLine(StringCache strings) {
        this.strings = strings;
    }

    /** The event of {@code line}, or null when the tree reader must read it. */
    static ServiceEvent read(String line) {
        char[] chars = line.toCharArray();
        return new StreamedLine(null).read(chars, 0, chars.length);
    }

    /**
     * The event of the line that starts at {@code off} in {@code src} and ends at its first newline before {@code
     * limit}, or null (as above, and when no newline follows the object before {@code limit}). On success {@link
     * #lineEnd()} is the newline's index. The same event as {@link #read(char[], int, int)} of the line without its
     * newline: a newline is the only character that differs, and no line holds one. Spares the caller a pass over
     * the characters to find the line's end first.
     */
    ServiceEvent readLine(char[] src, int off, int limit) {
        lineMode = true;
        try {
            return read(src, off, limit - off);
        } finally {
            lineMode = false;
        }
    }

    /** The index of the newline that ended the last line {@link #readLine} read. */
    int lineEnd() {
        return i;
    }

    /** The event of the line in {@code len} characters of {@code src} from {@code off}, or null (as above). */
    ServiceEvent read(char[] src, int off, int len) {
        s = src;
        i = off;
        end = off + len;
        keyCount = 0;
        try {
            return event();
        } catch (RuntimeException e) {
            lineAttributes.clear(); // what the line gave before it was declined is not the next line's
            return null; // Decline, or a value a conversion refused: the tree reader says what is wrong
        } finally {
            s = null;
        }
    }

    private ServiceEvent event() {
        ws();
        expect('{');
        boolean hasTs = false;
        long ts = 0;
        Long dur = null;
        String name = null;
        String domain = "";
        Long pid = null;
        String tid = null;
        ServiceAttributes.Builder attributes = lineAttributes; // empty: event() and a decline both leave it so
        ws();
        if (peek() == '}') {
            throw DECLINE; // no ts_ns, no name
        }
        do {
            String key = key();
            if (!firstTime(key)) {
                throw DECLINE;
            }
            switch (key) {
                case "v" -> {
                    number();
                    if (!numberIsInteger || !numberFitsLong || numberLong != ServiceJsonLines.VERSION) {
                        throw DECLINE;
                    }
                }
                case "ts_ns" -> {
                    ts = plainLong();
                    hasTs = true;
                }
                case "dur_ns" -> {
                    if (!isNull()) {
                        dur = plainLong();
                        if (dur < 0) {
                            throw DECLINE;
                        }
                    }
                }
                case "name" -> {
                    name = string();
                    if (name.isEmpty()) {
                        throw DECLINE;
                    }
                }
                case "domain" -> {
                    if (!isNull()) {
                        domain = string();
                    }
                }
                case "pid" -> pid = isNull() ? null : pids.of(plainLong());
                case "tid" -> tid = isNull() ? null : string();
                default -> attribute(key, attributes);
            }
            ws();
        } while (comma('}'));
        ws();
        boolean ended = lineMode ? i < end && s[i] == '\n' : i == end;
        if (!ended || !hasTs || name == null) {
            throw DECLINE;
        }
        return attributes.event(domain, name, ts, dur, pid, tid);
    }

    /**
     * A database row's attribute object (msServiceProfiler's {@code args} or an mstx message as JSON): its {@code
     * name} and {@code domain} (null when absent or null) and the other keys as attributes, as {@code ServiceDb}
     * reads them through the tree; null when the tree must read it (the same rules as for a line).
     */
    record RowAttributes(String name, String domain, ServiceAttributes attributes) {}

    /** The attributes of {@code json} (see {@link RowAttributes}), or null. */
    RowAttributes attributes(String json) {
        s = json.toCharArray();
        i = 0;
        end = s.length;
        keyCount = 0;
        try {
            ws();
            expect('{');
            String name = null;
            String domain = null;
            ServiceAttributes.Builder attributes = new ServiceAttributes.Builder();
            ws();
            if (peek() == '}') {
                i++;
            } else {
                do {
                    String key = key();
                    if (!firstTime(key)) {
                        throw DECLINE;
                    }
                    switch (key) {
                        case "name" -> name = isNull() ? null : string();
                        case "domain" -> domain = isNull() ? null : string();
                        default -> attribute(key, attributes);
                    }
                    ws();
                } while (comma('}'));
            }
            ws();
            if (i != end) {
                throw DECLINE;
            }
            return new RowAttributes(name, domain, attributes.build());
        } catch (RuntimeException e) {
            return null; // Decline, or a value a conversion refused: the tree reads it
        } finally {
            s = null;
        }
    }

    private void attribute(String key, ServiceAttributes.Builder out) {
        if (isNull()) {
            return; // as the tree: a null attribute is no attribute
        }
        char c = peek();
        if (ServiceAttributes.RID_KEYS.contains(key)) {
            if (c == '"') {
                out.requests(RequestIds.parse(string()));
            } else if (c == '[') {
                ridList(out);
            } else {
                throw DECLINE;
            }
            return;
        }
        if (c == '"') {
            String text = string();
            out.value(key, ServiceAttributes.number(text), text);
        } else if (c == 't' || c == 'f') {
            boolean b = literal(c == 't' ? "true" : "false");
            out.value(key, b ? 1.0 : 0.0, Boolean.toString(b));
        } else {
            number(); // anything else is no number: declined there (an object or a list as a label: the tree's JSON)
            if (!metricOrDelta(key) || (numberIsInteger && !numberFitsLong)) {
                throw DECLINE; // a number as a label is the tree's text of the number
            }
            out.value(key, doubleValue(), null);
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

    /** A {@code rid} list: strings, nulls and flat request objects, through its closing bracket. */
    private void ridList(ServiceAttributes.Builder out) {
        expect('[');
        ws();
        if (peek() == ']') {
            i++;
            return;
        }
        do {
            ws();
            char c = peek();
            if (c == '"') {
                out.requests(RequestIds.parse(string()));
            } else if (c == '{') {
                ridObject(out);
            } else if (!isNull()) {
                throw DECLINE;
            }
            ws();
        } while (comma(']'));
    }

    /**
     * {@code {"rid": "...", "iter": N, "type": "...", "num_scheduled_tokens=": N}}, each key at most once and in
     * one spelling, {@code rid} a string, the numbers integers: one request, as the tree reads it.
     */
    private void ridObject(ServiceAttributes.Builder out) {
        expect('{');
        String rid = null;
        Long iter = null;
        String type = null;
        Long tokens = null;
        boolean iterSeen = false;
        boolean typeSeen = false;
        boolean tokensSeen = false;
        ws();
        if (peek() == '}') {
            throw DECLINE; // no rid
        }
        do {
            String key = key();
            switch (key) {
                case "rid" -> {
                    if (rid != null) {
                        throw DECLINE;
                    }
                    rid = string();
                }
                case "iter" -> {
                    if (iterSeen) {
                        throw DECLINE;
                    }
                    iterSeen = true;
                    iter = isNull() ? null : plainLong();
                }
                case "type" -> {
                    if (typeSeen) {
                        throw DECLINE;
                    }
                    typeSeen = true;
                    type = isNull() ? null : string();
                }
                case "num_scheduled_tokens", "num_scheduled_tokens=", "num_scheduled_tokens+" -> {
                    if (tokensSeen) {
                        throw DECLINE;
                    }
                    tokensSeen = true;
                    tokens = isNull() ? null : plainLong();
                }
                default -> throw DECLINE; // another key (or another spelling of these): the tree's rules
            }
            ws();
        } while (comma('}'));
        if (rid == null) {
            throw DECLINE;
        }
        out.request(RequestIds.ref(rid, iter, type, tokens));
    }

    /** Whether {@code key} is new in the current object (the tree keeps a repeated key's last value). */
    private boolean firstTime(String key) {
        for (int k = 0; k < keyCount; k++) {
            if (keys[k].equals(key)) {
                return false;
            }
        }
        if (keyCount == MAX_KEYS) {
            return false;
        }
        keys[keyCount++] = key;
        return true;
    }

    // --- the tokens of strict JSON ---

    private char peek() {
        if (i >= end) {
            throw DECLINE;
        }
        return s[i];
    }

    private void expect(char c) {
        if (peek() != c) {
            throw DECLINE;
        }
        i++;
    }

    /** After a member or an element: true at a comma (skipped), false at {@code close} (skipped). */
    private boolean comma(char close) {
        char c = peek();
        i++;
        if (c == ',') {
            return true;
        }
        if (c == close) {
            return false;
        }
        throw DECLINE;
    }

    /** JSON's white space, which is all Jackson skips between tokens; in {@link #lineMode} a newline ends the line. */
    private void ws() {
        while (i < end) {
            char c = s[i];
            if (c != ' ' && c != '\t' && c != '\r' && (c != '\n' || lineMode)) {
                return;
            }
            i++;
        }
    }

    /** A member's key and its colon, with the white space around them. */
    private String key() {
        ws();
        String key = knownKey();
        if (key == null) {
            key = string();
        }
        ws();
        expect(':');
        ws();
        return key;
    }

    /**
     * At a key's opening quote: the key as a constant when it is one that every line or request object has (the
     * reserved keys, {@code rid} and its object's keys), written without escapes, and {@link #i} after its closing
     * quote; else null and {@link #i} unmoved. Found by length and first letters, with no hash and no cache.
     */
    private String knownKey() {
        int start = i + 1;
        if (start > end || s[i] != '"') {
            return null;
        }
        int stop = Math.min(end, start + MAX_KNOWN_KEY_CHARS + 1);
        int q = start;
        while (q < stop && s[q] != '"') {
            q++;
        }
        if (q == stop) {
            return null;
        }
        char first = q > start ? s[start] : 0;
        String key =
                switch (q - start) {
                    case 1 -> "v";
                    case 3 -> first == 'r' ? "rid" : first == 'p' ? "pid" : "tid";
                    case 4 -> first == 'n' ? "name" : first == 'i' ? "iter" : "type";
                    case 5 -> "ts_ns";
                    case 6 -> first == 'd' && s[start + 1] == 'u' ? "dur_ns" : "domain";
                    case 21 -> "num_scheduled_tokens=";
                    default -> null;
                };
        if (key == null) {
            return null;
        }
        for (int k = 0; k < key.length(); k++) {
            if (s[start + k] != key.charAt(k)) {
                return null;
            }
        }
        i = q + 1;
        return key;
    }

    /** Skips a {@code null} and says so; false at any other value. */
    private boolean isNull() {
        if (peek() != 'n') {
            return false;
        }
        literal("null");
        return true;
    }

    /** {@code word} (true, false or null), which must be there; its truth. */
    private boolean literal(String word) {
        if (end - i < word.length()) {
            throw DECLINE;
        }
        for (int k = 0; k < word.length(); k++) {
            if (s[i + k] != word.charAt(k)) {
                throw DECLINE;
            }
        }
        i += word.length();
        return word.charAt(0) == 't';
    }

    /** A string value or key, escapes resolved; an unescaped control character declines, as Jackson refuses it. */
    private String string() {
        expect('"');
        int start = i;
        while (i < end) {
            char c = s[i];
            if (c == '"') {
                int len = i - start;
                i++;
                return strings != null ? strings.get(s, start, len) : new String(s, start, len);
            }
            if (c == '\\') {
                return escaped(start);
            }
            if (c < 0x20) {
                throw DECLINE;
            }
            i++;
        }
        throw DECLINE;
    }

    /** The rest of a string with escapes, from its first backslash at {@link #i}; {@code start} its first char. */
    private String escaped(int start) {
        StringBuilder b = new StringBuilder(i - start + 16).append(s, start, i - start);
        while (i < end) {
            char c = s[i++];
            if (c == '"') {
                return b.toString();
            }
            if (c < 0x20) {
                throw DECLINE;
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = peek();
            i++;
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    if (end - i < 4) {
                        throw DECLINE;
                    }
                    int code = 0;
                    for (int k = 0; k < 4; k++) {
                        int d = hexDigit(s[i++]);
                        if (d < 0) {
                            throw DECLINE;
                        }
                        code = code * 16 + d;
                    }
                    b.append((char) code);
                }
                default -> throw DECLINE; // Jackson refuses any other escape
            }
        }
        throw DECLINE;
    }

    /** An ASCII hex digit's value, else -1 (Character.digit would take other scripts' digits, Jackson does not). */
    private static int hexDigit(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    }

    /**
     * A number token (JSON's grammar: no leading zeros, no plus sign, digits on both sides of a point). Sets {@link
     * #numberIsInteger}, and for an integer {@link #numberFitsLong} and {@link #numberLong}.
     */
    private void number() {
        int start = i;
        if (peek() == '-') {
            i++;
        }
        char c = peek();
        if (c == '0') {
            i++;
        } else if (c >= '1' && c <= '9') {
            digits();
        } else {
            throw DECLINE;
        }
        int integerEnd = i;
        boolean integer = true;
        if (i < end && s[i] == '.') {
            integer = false;
            i++;
            if (digits() == 0) {
                throw DECLINE;
            }
        }
        if (i < end && (s[i] == 'e' || s[i] == 'E')) {
            integer = false;
            i++;
            if (i < end && (s[i] == '+' || s[i] == '-')) {
                i++;
            }
            if (digits() == 0) {
                throw DECLINE;
            }
        }
        if (i - start > MAX_NUMBER_CHARS) {
            throw DECLINE;
        }
        numberStart = start;
        numberIsInteger = integer;
        if (integer) {
            boolean negative = s[start] == '-';
            int first = negative ? start + 1 : start;
            int n = integerEnd - first;
            if (n > 19) {
                numberFitsLong = false; // Jackson's BIG_INTEGER
                return;
            }
            long v = 0;
            for (int k = first; k < Math.min(integerEnd, first + 18); k++) {
                v = v * 10 + (s[k] - '0'); // at most 18 digits: within a long
            }
            numberFitsLong = true;
            if (n == 19) { // nanosecond times since 1970 have 19 digits: the last one checked for overflow
                try {
                    long tens = Math.multiplyExact(v, 10);
                    int d = s[first + 18] - '0';
                    numberLong = negative ? Math.subtractExact(-tens, d) : Math.addExact(tens, d);
                } catch (ArithmeticException e) {
                    numberFitsLong = false;
                }
            } else {
                numberLong = negative ? -v : v;
            }
        }
    }

    private int digits() {
        int from = i;
        while (i < end && s[i] >= '0' && s[i] <= '9') {
            i++;
        }
        return i - from;
    }

    /** An integer that fits a long (a big integer, a fraction or any other value declines: the tree's rules). */
    private long plainLong() {
        number();
        if (!numberIsInteger || !numberFitsLong) {
            throw DECLINE;
        }
        return numberLong;
    }

    /**
     * The last number token as Jackson's {@code getDoubleValue} gives it: an integer converted from its long, a
     * fraction correctly rounded (exactly, without a string, for at most 15 digits and no exponent).
     */
    private double doubleValue() {
        if (numberIsInteger) {
            return numberLong;
        }
        boolean negative = s[numberStart] == '-';
        long m = 0;
        int digitCount = 0;
        int fractionDigits = 0;
        boolean fraction = false;
        for (int k = negative ? numberStart + 1 : numberStart; k < i; k++) {
            char c = s[k];
            if (c == '.') {
                fraction = true;
            } else if (c >= '0' && c <= '9') {
                m = m * 10 + (c - '0');
                if (++digitCount > 15) {
                    return Double.parseDouble(new String(s, numberStart, i - numberStart));
                }
                if (fraction) {
                    fractionDigits++;
                }
            } else { // an exponent
                return Double.parseDouble(new String(s, numberStart, i - numberStart));
            }
        }
        double v = m / EXACT_POWERS_OF_TEN[fractionDigits];
        return negative ? -v : v;
    }
}
