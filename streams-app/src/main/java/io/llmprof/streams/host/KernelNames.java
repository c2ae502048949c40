package io.llmprof.streams.host;

import io.llmprof.events.host.HostStep;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The kernel names of a tracker's buffered GPU operations, each once: the stored GPU chunks refer to them by index
 * (a chunk-local table would repeat a step's long kernel names in every chunk of every stored value). At most
 * {@value #MAX} names, the last of them {@link HostStep#OTHER} for a new name while the table is full. Indexes change
 * only in {@link #retain}, which the tracker calls when the table is full, keeping the names its buffer still holds;
 * otherwise a chunk's bytes stay valid while it is copied from value to value.
 */
final class KernelNames {
    static final int MAX = 1024;

    final List<String> names = new ArrayList<>();
    private final Map<String, Integer> ids = new HashMap<>();

    /** The name as the buffer keeps it: the table's own string, or {@link HostStep#OTHER} once the table is full. */
    String intern(String name) {
        Integer id = ids.get(name);
        if (id != null) {
            return names.get(id);
        }
        if (names.size() >= MAX - 1 && !name.equals(HostStep.OTHER)) {
            return intern(HostStep.OTHER); // the last slot is kept for it
        }
        ids.put(name, names.size());
        names.add(name);
        return name;
    }

    /** 1 + index, 0 for null. */
    int ref(String name) {
        if (name == null) {
            return 0;
        }
        Integer id = ids.get(name);
        if (id == null) {
            throw new IllegalStateException("kernel name not in the table: " + name);
        }
        return id + 1;
    }

    String name(int ref) {
        if (ref < 0 || ref > names.size()) {
            throw new IllegalArgumentException(
                    "host tracker state: kernel name " + ref + " outside the table of " + names.size());
        }
        return ref == 0 ? null : names.get(ref - 1);
    }

    boolean full() {
        return names.size() >= MAX - 1;
    }

    boolean contains(String name) {
        return ids.containsKey(name);
    }

    /** Keeps only {@code live}, in its order: every index may change. */
    void retain(Iterable<String> live) {
        names.clear();
        ids.clear();
        for (String n : live) {
            if (!ids.containsKey(n)) {
                add(n);
            }
        }
    }

    /** Restores a stored table, in order. */
    void add(String name) {
        ids.put(name, names.size());
        names.add(name);
    }
}
