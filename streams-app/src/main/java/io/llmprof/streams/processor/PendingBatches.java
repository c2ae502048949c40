package io.llmprof.streams.processor;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ObjLongConsumer;
import java.util.function.ToLongFunction;

/**
 * Per key, the batches that changed its live state since the state was last written ({@link CommitHookStore}): kept
 * by reference so that a batch failing half-way can be undone by replaying the ones before it onto the stored state,
 * with their event count (a key is written at once beyond {@link #MAX_EVENTS}, which bounds this memory) and the
 * timestamp of the last one (the write's record timestamp). Keys in the order they first changed.
 *
 * @param <K> the state's key
 * @param <B> what replays one batch
 */
final class PendingBatches<K, B> {
    /** Events a key may take in between two writes. */
    static final int MAX_EVENTS = 1 << 16;

    /** One key's batches since its last write. */
    static final class Pending<B> {
        final List<B> batches = new ArrayList<>();
        int events;
        long timestampMs;
    }

    private final Map<K, Pending<B>> byKey = new LinkedHashMap<>();

    /** The key's pending batches, or null when its state is written. */
    Pending<B> get(K key) {
        return byKey.get(key);
    }

    /** Forgets the key's batches (its state was written, dropped or reset); returns them, or null. */
    Pending<B> remove(K key) {
        return byKey.remove(key);
    }

    /** Whether adding {@code events} more to the key stays within {@link #MAX_EVENTS}. */
    boolean fits(K key, int events) {
        Pending<B> p = byKey.get(key);
        return (p == null ? 0 : p.events) + events <= MAX_EVENTS;
    }

    void add(K key, B batch, int events, long timestampMs) {
        Pending<B> p = byKey.computeIfAbsent(key, k -> new Pending<>());
        p.batches.add(batch);
        p.events += events;
        p.timestampMs = timestampMs;
    }

    boolean isEmpty() {
        return byKey.isEmpty();
    }

    void clear() {
        byKey.clear();
    }

    /**
     * Empties this, then runs {@code write} for every key that had pending batches, in order, with the timestamp of
     * its last batch (what the write's records carry).
     */
    void drainEach(ObjLongConsumer<K> write) {
        drainEach(byKey, p -> p.timestampMs, write);
    }

    /**
     * Empties {@code changed} (keys to write, in order, with what gives each one's timestamp), then runs {@code write}
     * for each: the loop of a commit hook, whether it keeps batches ({@link #drainEach(ObjLongConsumer)}) or only when
     * a key last changed. A write may change the map again (a key written as it leaves a cache); that is a later
     * commit's.
     */
    static <K, V> void drainEach(Map<K, V> changed, ToLongFunction<V> timestampMs, ObjLongConsumer<K> write) {
        if (changed.isEmpty()) {
            return;
        }
        List<Map.Entry<K, V>> all = new ArrayList<>(changed.entrySet());
        changed.clear();
        for (Map.Entry<K, V> e : all) {
            write.accept(e.getKey(), timestampMs.applyAsLong(e.getValue()));
        }
    }
}
