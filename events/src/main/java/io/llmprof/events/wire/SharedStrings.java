package io.llmprof.events.wire;

/**
 * One instance per distinct short string a decoder reads many times over (a layer's job, run, rank and type, its
 * kernel family and category names, its category keys): the dashboard holds tens of thousands of layers, and without
 * this each would keep its own copies of the same few hundred names. Direct-mapped and fixed in size, so memory stays
 * bounded whatever the input: a miss overwrites the slot, and strings longer than {@link #MAX_LENGTH} chars are never
 * kept. Safe to share between threads without locks: a slot holds an immutable {@link String} (safely published
 * through its final fields), so a racing thread sees either string and at worst misses.
 */
final class SharedStrings {
    static final int MAX_LENGTH = 256;
    private static final int SLOTS = 4096;

    private final String[] slots = new String[SLOTS];

    /** The kept instance equal to {@code s}, or {@code s} itself (then kept, if short enough); null for null. */
    String of(String s) {
        if (s == null || s.length() > MAX_LENGTH) {
            return s;
        }
        int h = s.hashCode();
        int i = (h ^ (h >>> 16)) & (SLOTS - 1);
        String kept = slots[i];
        if (s.equals(kept)) {
            return kept;
        }
        slots[i] = s;
        return s;
    }
}
