package io.llmprof.streams.processor;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A key-value store over a map, for driving the processor with {@code MockProcessorContext}: its content can
 * be copied and put back (what a changelog restore does), and its writes can be made to fail.
 */
final class MapStore<K, V> implements KeyValueStore<K, V> {
    private final String name;
    private final Map<K, V> map = new LinkedHashMap<>();
    private boolean failWrites;
    private int puts;

    MapStore(String name) {
        this.name = name;
    }

    /** From now on, every put and delete throws (until told otherwise). */
    void failWrites(boolean fail) {
        failWrites = fail;
    }

    /** Puts so far (writes of a value, not deletes). */
    int puts() {
        return puts;
    }

    Map<K, V> snapshot() {
        return new LinkedHashMap<>(map);
    }

    void restore(Map<K, V> content) {
        map.clear();
        map.putAll(content);
    }

    @Override
    public void put(K key, V value) {
        checkWritable();
        puts++;
        if (value == null) {
            map.remove(key);
        } else {
            map.put(key, value);
        }
    }

    @Override
    public V putIfAbsent(K key, V value) {
        V old = map.get(key);
        if (old == null) {
            put(key, value);
        }
        return old;
    }

    @Override
    public void putAll(List<KeyValue<K, V>> entries) {
        entries.forEach(kv -> put(kv.key, kv.value));
    }

    @Override
    public V delete(K key) {
        checkWritable();
        return map.remove(key);
    }

    private void checkWritable() {
        if (failWrites) {
            throw new IllegalStateException("store " + name + " refuses writes (test)");
        }
    }

    @Override
    public V get(K key) {
        return map.get(key);
    }

    @Override
    public KeyValueIterator<K, V> range(K from, K to) {
        throw new UnsupportedOperationException("range");
    }

    @Override
    public KeyValueIterator<K, V> all() {
        Iterator<Map.Entry<K, V>> it = new ArrayList<>(map.entrySet()).iterator();
        return new KeyValueIterator<>() {
            @Override
            public boolean hasNext() {
                return it.hasNext();
            }

            @Override
            public KeyValue<K, V> next() {
                Map.Entry<K, V> e = it.next();
                return KeyValue.pair(e.getKey(), e.getValue());
            }

            @Override
            public K peekNextKey() {
                throw new UnsupportedOperationException("peekNextKey");
            }

            @Override
            public void close() {}
        };
    }

    @Override
    public long approximateNumEntries() {
        return map.size();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void init(StateStoreContext context, StateStore root) {}

    @Override
    public void close() {}

    @Override
    public boolean persistent() {
        return false;
    }

    @Override
    public boolean isOpen() {
        return true;
    }
}
