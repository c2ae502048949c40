package io.llmprof.events.wire;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The strings of one batch, each once, referred to by index; index 0 is always {@code ""} (pprof's rule). */
final class StringTable {
    private final Map<String, Integer> indexes = new HashMap<>();
    private final List<String> strings = new ArrayList<>();

    StringTable() {
        index("");
    }

    int index(String s) {
        Integer i = indexes.get(s);
        if (i == null) {
            i = strings.size();
            indexes.put(s, i);
            strings.add(s);
        }
        return i;
    }

    List<String> strings() {
        return strings;
    }

    /** Checks a received table: empty, or {@code ""} first. */
    static void check(List<String> table) {
        if (!table.isEmpty() && !table.get(0).isEmpty()) {
            throw new IllegalArgumentException("string_table[0] must be \"\"");
        }
    }

    /** The string at {@code index} of a received table, refusing an index outside it. */
    static String at(List<String> table, int index, String field) {
        // uint32 on the wire: an index of 2^31 or more arrives negative.
        if (index < 0 || index >= table.size()) {
            throw new IllegalArgumentException(field + " index " + Integer.toUnsignedString(index)
                    + " outside the string table (" + table.size() + " strings)");
        }
        return table.get(index);
    }
}
