package io.llmprof.streams.category;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Short display names for tables: Itanium-mangled names reduced to their qualified identifier, then the
 * ordered replacement rules of profiles.json ({@code display_names}) applied in turn.
 */
public final class DisplayNames {
    /** One ordered replacement (Java regex and replacement with $n groups). */
    public record Rule(@JsonProperty("pattern") String pattern, @JsonProperty("replacement") String replacement) {
        public Rule {
            Objects.requireNonNull(pattern, "pattern");
            replacement = replacement == null ? "" : replacement;
            Pattern.compile(pattern);
        }
    }

    private final List<Rule> rules;
    private final List<Pattern> compiled;

    public DisplayNames(List<Rule> rules) {
        this.rules = List.copyOf(rules);
        this.compiled =
                this.rules.stream().map(r -> Pattern.compile(r.pattern())).toList();
    }

    public List<Rule> rules() {
        return rules;
    }

    public DisplayNames prependedBy(List<Rule> first) {
        List<Rule> all = new ArrayList<>(first);
        all.addAll(rules);
        return new DisplayNames(all);
    }

    public String simplify(String canonicalName) {
        String s = demangleQualifiedName(canonicalName);
        for (int i = 0; i < compiled.size(); i++) {
            s = compiled.get(i).matcher(s).replaceAll(rules.get(i).replacement());
        }
        return s.isBlank() ? canonicalName : s;
    }

    /** {@code _ZN5aiter24add_rmsnorm_quant_kernelI...} -> {@code aiter::add_rmsnorm_quant_kernel}; others unchanged. */
    static String demangleQualifiedName(String name) {
        if (!name.startsWith("_Z")) {
            return name;
        }
        int i = 2;
        boolean nested = i < name.length() && name.charAt(i) == 'N';
        if (nested) {
            i++;
        }
        List<String> parts = new ArrayList<>();
        while (i < name.length() && Character.isDigit(name.charAt(i))) {
            int j = i;
            while (j < name.length() && Character.isDigit(name.charAt(j))) {
                j++;
            }
            int len = Integer.parseInt(name.substring(i, j));
            if (j + len > name.length()) {
                break;
            }
            parts.add(name.substring(j, j + len));
            i = j + len;
            if (!nested) {
                break;
            }
        }
        return parts.isEmpty() ? name : String.join("::", parts);
    }
}
