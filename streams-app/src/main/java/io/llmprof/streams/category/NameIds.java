package io.llmprof.streams.category;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Names numbered in the order first seen: a name's id, and an id's name. The segmenter asks for an id per event, so a
 * new name is numbered without a lambda per call (on C1, which {@code analyze} runs on, a capturing lambda is an
 * object each time). Not thread-safe.
 */
public final class NameIds {
    private final List<String> names = new ArrayList<>();
    private final List<String> view = Collections.unmodifiableList(names);
    private final Map<String, Integer> ids = new HashMap<>();

    /** The id of {@code name}, numbering it next when it is new. */
    public int id(String name) {
        Integer id = ids.get(name);
        if (id == null) {
            id = names.size();
            names.add(name);
            ids.put(name, id);
        }
        return id;
    }

    public String name(int id) {
        return names.get(id);
    }

    public int size() {
        return names.size();
    }

    /** The names by id, as they are now (a view that follows later numbering; it cannot be changed). */
    public List<String> names() {
        return view;
    }

    /** Forgets every name: ids start again at 0. */
    public void clear() {
        names.clear();
        ids.clear();
    }
}
