package io.llmprof.streams.category;

import java.util.regex.Pattern;

/** Canonical kernel names (ANALYSIS.md section 2): the key for anchors, detection and categories. */
public final class KernelNames {
    private static final Pattern ADDRESS = Pattern.compile("0x[0-9a-f]+");

    private KernelNames() {}

    /**
     * Strips a leading {@code void }, the trailing balanced argument list {@code (...)}, and replaces
     * {@code 0x[0-9a-f]+} with {@code 0xADDR}; template arguments are kept.
     */
    public static String canonical(String name) {
        String s = name.strip();
        if (s.startsWith("void ")) {
            s = s.substring(5).strip();
        }
        s = stripTrailingArguments(s);
        return ADDRESS.matcher(s).replaceAll("0xADDR");
    }

    private static String stripTrailingArguments(String s) {
        if (!s.endsWith(")")) {
            return s;
        }
        int depth = 0;
        for (int i = s.length() - 1; i >= 0; i--) {
            char c = s.charAt(i);
            if (c == ')') {
                depth++;
            } else if (c == '(') {
                depth--;
                if (depth == 0) {
                    // "f()" keeps nothing to strip when the list is the whole name.
                    return i == 0 ? s : s.substring(0, i).stripTrailing();
                }
            }
        }
        return s; // unbalanced: leave as is
    }

    /** A regex matching exactly this canonical name (what an auto-detected anchor is reported as). */
    public static String exactRegex(String canonical) {
        StringBuilder b = new StringBuilder(canonical.length() + 8).append('^');
        for (int i = 0; i < canonical.length(); i++) {
            char c = canonical.charAt(i);
            if ("\\.[]{}()*+-?^$|".indexOf(c) >= 0) {
                b.append('\\');
            }
            b.append(c);
        }
        return b.append('$').toString();
    }
}
