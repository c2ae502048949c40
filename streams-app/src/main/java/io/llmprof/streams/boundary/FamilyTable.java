package io.llmprof.streams.boundary;

import com.carrotsearch.hppc.LongIntHashMap;
import io.llmprof.events.KernelFamily;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The segmenter's interned kernel-family names (simplified display names; "memcpy" / "memset" for copies), which
 * rows reference by index in their {@link Rows#FAMILY} column, and the per-layer top list built from them.
 *
 * <p>Bounded: at most {@link #MAX_NAMES} names; a new name beyond that is {@link KernelFamily#OTHER}. When a pass
 * closes and the table is more than half full, it is rebuilt from the rows still open ({@link #compact}), so a
 * long-running stream whose kernel names drift never saturates it.
 */
final class FamilyTable {
    static final int MAX_NAMES = 4096;
    /** Category of an {@link KernelFamily#OTHER} row whose families have different categories. */
    static final String MIXED = "mixed";

    /** Longest total first; ties: family, then category. */
    private static final Comparator<KernelFamily> LONGEST_FIRST = Comparator.comparingLong(KernelFamily::sumNs)
            .reversed()
            .thenComparing(KernelFamily::family)
            .thenComparing(KernelFamily::category);

    private final List<String> names = new ArrayList<>();
    private final Map<String, Integer> ids = new HashMap<>();

    static FamilyTable of(List<String> names) {
        FamilyTable t = new FamilyTable();
        names.forEach(t::id);
        return t;
    }

    List<String> names() {
        return names;
    }

    /** Index of {@code family}, interning it while there is room; {@link KernelFamily#OTHER}'s once full. */
    int id(String family) {
        Integer id = ids.get(family);
        if (id != null) {
            return id;
        }
        String name = names.size() < MAX_NAMES - 1 || family.equals(KernelFamily.OTHER) ? family : KernelFamily.OTHER;
        return ids.computeIfAbsent(name, n -> {
            names.add(n);
            return names.size() - 1;
        });
    }

    /**
     * When more than half full, keeps only the names {@code rows} reference and rewrites their family column.
     *
     * @return true when indexes changed (caches of family indexes must be dropped)
     */
    boolean compact(List<long[]> rows) {
        if (names.size() <= MAX_NAMES / 2) {
            return false;
        }
        List<String> old = new ArrayList<>(names);
        names.clear();
        ids.clear();
        for (long[] r : rows) {
            r[Rows.FAMILY] = id(old.get((int) r[Rows.FAMILY]));
        }
        return true;
    }

    /**
     * The families of a layer's rows by total duration, longest first (ties: name, then category order): the first
     * {@code top}, then one {@link KernelFamily#OTHER} row summing the rest. A family is a (label, category) pair:
     * kernels of one label that their launch ops put in different categories are different families.
     */
    static List<KernelFamily> top(List<long[]> rows, List<String> familyNames, List<String> categoryNames, int top) {
        // (family, category) -> index in acc of {count, sum, max, category, family}; no box or lambda per row
        LongIntHashMap index = new LongIntHashMap();
        List<long[]> acc = new ArrayList<>();
        long[] overflow = null; // rows whose family did not fit the table: part of the OTHER row
        for (int i = 0; i < rows.size(); i++) {
            long[] r = rows.get(i);
            String family = familyNames.get((int) r[Rows.FAMILY]);
            if (family.equals(KernelFamily.OTHER)) {
                overflow = overflow == null ? new long[] {0, 0, 0, r[Rows.CATEGORY]} : overflow;
                overflow[0]++;
                overflow[1] += r[Rows.DUR];
                overflow[2] = Math.max(overflow[2], r[Rows.DUR]);
                overflow[3] = overflow[3] == r[Rows.CATEGORY] ? overflow[3] : -1;
                continue;
            }
            long key = (r[Rows.FAMILY] << 32) | r[Rows.CATEGORY];
            int slot = index.indexOf(key);
            long[] a;
            if (index.indexExists(slot)) {
                a = acc.get(index.indexGet(slot));
            } else {
                a = new long[] {0, 0, 0, r[Rows.CATEGORY], r[Rows.FAMILY]};
                index.indexInsert(slot, key, acc.size());
                acc.add(a);
            }
            a[0]++;
            a[1] += r[Rows.DUR];
            a[2] = Math.max(a[2], r[Rows.DUR]);
        }
        List<KernelFamily> all = new ArrayList<>(acc.size());
        for (int i = 0; i < acc.size(); i++) {
            long[] a = acc.get(i);
            all.add(new KernelFamily(
                    familyNames.get((int) a[4]), categoryNames.get((int) a[3]), (int) a[0], a[1], a[2]));
        }
        all.sort(LONGEST_FIRST);
        if (all.size() <= top && overflow == null) {
            return all;
        }
        List<KernelFamily> out = new ArrayList<>(all.subList(0, Math.min(top, all.size())));
        int count = 0;
        long sum = 0;
        long max = 0;
        String category = null;
        if (overflow != null) {
            count = (int) overflow[0];
            sum = overflow[1];
            max = overflow[2];
            category = overflow[3] < 0 ? MIXED : categoryNames.get((int) overflow[3]);
        }
        for (KernelFamily f : all.subList(Math.min(top, all.size()), all.size())) {
            count += f.count();
            sum += f.sumNs();
            max = Math.max(max, f.maxNs());
            category = category == null || category.equals(f.category()) ? f.category() : MIXED;
        }
        out.add(new KernelFamily(KernelFamily.OTHER, category, count, sum, max));
        return out;
    }
}
