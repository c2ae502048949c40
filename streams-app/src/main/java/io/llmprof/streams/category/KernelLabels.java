package io.llmprof.streams.category;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What a kernel is, from its canonical name, without its template details: the qualified name and the <em>kinds</em>
 * of its template arguments. A kind is the unqualified name of a type argument (its own template arguments
 * dropped; numbers, booleans, casts, {@code std::} / {@code cute::} / {@code at::detail::} helpers and built-in types
 * skipped), at most two. A lambda argument's kind is the function that holds it, also inside a one-argument template
 * (ATen's {@code gpu_kernel_impl<lambda>}); an {@code enable_*} wrapper (FlashAttention 3's {@code
 * enable_sm90_or_later}, torch's {@code enable_3x_kernel_for_sm9x}) is looked through. Itanium-mangled names
 * (hipcc, ck_tile) get the same from their top-level template arguments.
 *
 * <p>So {@code cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<...>>>} is {@code
 * cutlass::device_kernel<FlashAttnBwdSm90>} and a grouped GEMM through the same launcher {@code
 * cutlass::device_kernel<GemmUniversal>}; {@code _ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefill...} is {@code
 * ck_tile::kentry<FmhaBatchPrefillWithPagedKVCacheKernel>}. Category rules see this identity before the full name
 * (a template argument such as {@code BlockAttentionQuantScaleEnum} must not make attention a quant kernel), and
 * kernel families are keyed by it, so one launcher template never merges different kernels.
 */
public final class KernelLabels {
    static final int MAX_KINDS = 2;
    private static final int MAX_WRAPPER_DEPTH = 3;
    private static final Set<String> BUILTIN = Set.of(
            "void",
            "bool",
            "char",
            "short",
            "int",
            "long",
            "float",
            "double",
            "unsigned",
            "signed",
            "half",
            "__half",
            "__nv_half",
            "__nv_bfloat16",
            "__hip_bfloat16",
            "size_t",
            "int8_t",
            "int16_t",
            "int32_t",
            "int64_t",
            "uint8_t",
            "uint16_t",
            "uint32_t",
            "uint64_t");

    private KernelLabels() {}

    /** The qualified name (template arguments dropped; Itanium names demangled to it) plus {@code <kinds>}. */
    public static String identity(String canonical) {
        List<String> kinds = kinds(canonical);
        String head = canonical.startsWith("_Z") ? DisplayNames.demangleQualifiedName(canonical) : head(canonical);
        return kinds.isEmpty() ? head : head + "<" + String.join(", ", kinds) + ">";
    }

    /** The kinds of the top-level template arguments, at most {@value #MAX_KINDS}, in order, without repeats. */
    public static List<String> kinds(String canonical) {
        if (canonical.startsWith("_Z")) {
            return new Itanium(canonical).kinds();
        }
        int lt = topLevelTemplateStart(canonical);
        int gt = canonical.lastIndexOf('>');
        if (lt < 0 || gt < lt) {
            return List.of();
        }
        List<String> kinds = new ArrayList<>(MAX_KINDS);
        for (String arg : splitTopLevel(canonical.substring(lt + 1, gt))) {
            String k = kind(arg, 0);
            if (k != null && !kinds.contains(k)) {
                kinds.add(k);
                if (kinds.size() == MAX_KINDS) {
                    break;
                }
            }
        }
        return kinds;
    }

    /**
     * The family label of a kernel: its display name with the {@code <…>} the display rules left in place of the
     * template arguments replaced by their kinds ({@code device_kernel<FlashAttnBwdSm90>}); an Itanium name gets
     * its kinds appended ({@code kentry<Rmsnorm2dFwd>}). Without kinds the display name as it is.
     */
    public static String familyLabel(String displayName, String canonical) {
        List<String> kinds = kinds(canonical);
        if (kinds.isEmpty()) {
            return displayName;
        }
        String k = "<" + String.join(", ", kinds) + ">";
        int at = displayName.indexOf("<…>");
        if (at >= 0) {
            return displayName.substring(0, at) + k + displayName.substring(at + 3);
        }
        return canonical.startsWith("_Z") && displayName.indexOf('<') < 0 ? displayName + k : displayName;
    }

    /** Everything before the top-level template argument list (the whole name when there is none). */
    static String head(String canonical) {
        int lt = topLevelTemplateStart(canonical);
        return lt < 0 ? canonical : canonical.substring(0, lt);
    }

    /** Index of the '<' that opens the function's template argument list, -1 without one. */
    private static int topLevelTemplateStart(String s) {
        int paren = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '(') {
                paren++; // "(anonymous namespace)"
            } else if (c == ')') {
                paren--;
            } else if (c == '<' && paren == 0) {
                return i;
            }
        }
        return -1;
    }

    static List<String> splitTopLevel(String args) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        int from = 0;
        for (int i = 0; i < args.length(); i++) {
            char c = args.charAt(i);
            if (c == '<' || c == '(' || c == '{' || c == '[') {
                depth++;
            } else if (c == '>' || c == ')' || c == '}' || c == ']') {
                depth--;
            } else if (c == ',' && depth == 0) {
                out.add(args.substring(from, i).strip());
                from = i + 1;
            }
        }
        String last = args.substring(from).strip();
        if (!last.isEmpty()) {
            out.add(last);
        }
        return out;
    }

    private static String kind(String arg, int depth) {
        String a = arg.strip().replace("(anonymous namespace)::", "");
        if (a.startsWith("const ")) {
            a = a.substring(6).strip();
        }
        if (a.isEmpty()) {
            return null;
        }
        char c0 = a.charAt(0);
        if (Character.isDigit(c0) || c0 == '-' || c0 == '(' || a.equals("true") || a.equals("false")) {
            return null; // a value (number, bool, cast enum)
        }
        if (a.startsWith("std::")
                || a.startsWith("cute::")
                || a.startsWith("at::detail::")
                || a.startsWith("decltype")) {
            return null; // helpers: arrays, tuples, offset calculators
        }
        if (isLambda(a)) {
            return holder(a);
        }
        int lt = a.indexOf('<');
        String head = (lt < 0 ? a : a.substring(0, lt)).strip();
        while (!head.isEmpty() && (head.endsWith("*") || head.endsWith("&") || head.endsWith(" "))) {
            head = head.substring(0, head.length() - 1);
        }
        if (head.isEmpty()
                || !head.chars().allMatch(ch -> Character.isLetterOrDigit(ch) || ch == '_' || ch == ':' || ch == ' ')) {
            return null;
        }
        String name = last(head);
        if (name.isEmpty() || BUILTIN.contains(name) || head.startsWith("unsigned ") || head.startsWith("signed ")) {
            return null;
        }
        int gt = a.lastIndexOf('>');
        if (lt >= 0 && gt > lt && depth < MAX_WRAPPER_DEPTH) {
            List<String> inner = splitTopLevel(a.substring(lt + 1, gt));
            if (name.startsWith("enable_") && !inner.isEmpty()) {
                String k = kind(inner.get(0), depth + 1); // an arch guard around the real kernel
                if (k != null) {
                    return k;
                }
            }
            if (inner.size() == 1) {
                String i = inner.get(0).strip().replace("(anonymous namespace)::", "");
                if (isLambda(i)) {
                    return holder(i); // at::native::gpu_kernel_impl<the functor's lambda>: the functor says more
                }
            }
        }
        return name;
    }

    /** A lambda type: {@code ns::function(args)::{lambda(...)#1}...}, the function not itself a template argument. */
    private static boolean isLambda(String a) {
        int lambda = a.indexOf("::{lambda");
        int paren = a.indexOf('(');
        return lambda > 0 && paren > 0 && paren < lambda && a.lastIndexOf('<', paren) < 0;
    }

    /** The function holding a lambda type. */
    private static String holder(String lambda) {
        return last(lambda.substring(0, lambda.indexOf('(')));
    }

    private static String last(String qualified) {
        int i = qualified.lastIndexOf("::");
        return (i < 0 ? qualified : qualified.substring(i + 2)).strip();
    }

    /**
     * A scanner of an Itanium-mangled name's top-level template arguments, for their kinds only: a class type
     * argument (a source name, plain or nested, possibly with template arguments of its own) yields its last source
     * name; literals ({@code L...E}), packs, expressions, built-in types and template parameters yield nothing.
     * Anything it does not understand ends the scan (no kinds rather than wrong ones).
     */
    private static final class Itanium {
        private final String n;
        private int i;

        Itanium(String mangled) {
            this.n = mangled;
        }

        List<String> kinds() {
            i = 2;
            if (at('N')) {
                i++;
            }
            boolean named = false;
            while (i < n.length() && Character.isDigit(n.charAt(i))) {
                if (!sourceName()) {
                    return List.of();
                }
                named = true;
            }
            if (!named || !at('I')) {
                return List.of();
            }
            i++;
            List<String> kinds = new ArrayList<>(MAX_KINDS);
            while (i < n.length() && !at('E') && kinds.size() < MAX_KINDS) {
                int before = i;
                String k = argument();
                if (i <= before) {
                    break; // not understood
                }
                if (k != null && !BUILTIN.contains(k) && !kinds.contains(k)) {
                    kinds.add(k);
                }
            }
            return kinds;
        }

        private boolean at(char c) {
            return i < n.length() && n.charAt(i) == c;
        }

        private String lastName;

        /** One {@code <length><identifier>}; false when malformed. */
        private boolean sourceName() {
            int j = i;
            while (j < n.length() && Character.isDigit(n.charAt(j))) {
                j++;
            }
            if (j == i || j - i > 6) {
                return false;
            }
            int len = Integer.parseInt(n.substring(i, j));
            if (j + len > n.length()) {
                return false;
            }
            lastName = n.substring(j, j + len);
            i = j + len;
            return true;
        }

        /**
         * Skips from an opening I / J / X / N to its matching E: source names, literals, substitutions, template
         * parameters and built-in types inside are skipped whole (their digits and letters are no brackets).
         */
        private void skipBalanced() {
            int depth = 0;
            while (i < n.length()) {
                char c = n.charAt(i);
                if (Character.isDigit(c)) {
                    if (!sourceName()) {
                        i = n.length();
                    }
                } else if (c == 'L') {
                    skipLiteral();
                } else if (c == 'S') {
                    if (!substitution()) {
                        i = n.length();
                    }
                } else if (c == 'T') {
                    int j = n.indexOf('_', i);
                    i = j < 0 ? n.length() : j + 1;
                } else if (c == 'D') {
                    skipD();
                } else if (c == 'I' || c == 'J' || c == 'X' || c == 'N') {
                    depth++;
                    i++;
                } else if (c == 'E') {
                    depth--;
                    i++;
                    if (depth <= 0) {
                        return;
                    }
                } else {
                    i++;
                }
            }
        }

        /** {@code L <type> <value> E}: a value (number, bool, enum); to its E. */
        private void skipLiteral() {
            int j = n.indexOf('E', i);
            i = j < 0 ? n.length() : j + 1;
        }

        /** {@code DF16b}, {@code DF16_}, {@code Dn}, {@code Dp}, ...: a built-in or a pack marker. */
        private void skipD() {
            if (i + 1 < n.length() && n.charAt(i + 1) == 'F') {
                int j = i + 2;
                while (j < n.length() && Character.isDigit(n.charAt(j))) {
                    j++;
                }
                i = j < n.length() && (n.charAt(j) == 'b' || n.charAt(j) == '_') ? j + 1 : j;
            } else {
                i += 2;
            }
        }

        /** Skips a substitution {@code S_}, {@code S<seq>_} or {@code St}/{@code Sa}/...; false when malformed. */
        private boolean substitution() {
            if (i + 1 < n.length() && "tasiod".indexOf(n.charAt(i + 1)) >= 0) {
                i += 2;
                return true;
            }
            int j = n.indexOf('_', i);
            if (j < 0) {
                return false;
            }
            i = j + 1;
            return true;
        }

        /** One template argument; its kind, or null (the position always moves on, unless not understood). */
        private String argument() {
            char c = n.charAt(i);
            switch (c) {
                case 'L' -> {
                    skipLiteral();
                    return null;
                }
                case 'J', 'X' -> {
                    skipBalanced();
                    return null;
                }
                case 'P', 'R', 'K', 'V' -> {
                    i++;
                    return null; // the qualified type follows as the next "argument": its kind still counts
                }
                case 'T' -> {
                    int j = n.indexOf('_', i);
                    i = j < 0 ? n.length() : j + 1;
                    return null;
                }
                case 'D' -> {
                    skipD();
                    return null;
                }
                case 'N' -> {
                    i++;
                    String k = null;
                    while (i < n.length() && !at('E')) {
                        char d = n.charAt(i);
                        if (Character.isDigit(d)) {
                            if (!sourceName()) {
                                return null;
                            }
                            k = lastName;
                        } else if (d == 'S') {
                            if (!substitution()) {
                                return null;
                            }
                        } else if (d == 'I') {
                            skipBalanced();
                        } else {
                            return null;
                        }
                    }
                    i++; // E
                    return k;
                }
                case 'S' -> {
                    if (!substitution()) {
                        return null;
                    }
                    if (at('I')) {
                        skipBalanced();
                    }
                    return null;
                }
                default -> {
                    if (Character.isDigit(c)) {
                        if (!sourceName()) {
                            return null;
                        }
                        String k = lastName;
                        if (at('I')) {
                            skipBalanced();
                        }
                        return k;
                    }
                    if (Character.isLowerCase(c)) {
                        i++; // a built-in type
                    }
                    return null;
                }
            }
        }
    }
}
