package io.llmprof.streams.processor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.internals.InternalProcessorContext;
import org.apache.kafka.streams.processor.internals.ProcessorNode;
import org.apache.kafka.streams.processor.internals.ProcessorRecordContext;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.internals.WrappedStateStore;

/**
 * A key-value store that lets its task's processors write their state once per commit instead of once per record:
 * before Kafka Streams flushes a store's cache into its changelog on a commit (in the same transaction as the
 * offsets under exactly-once), it runs the registered {@link Listener}s, which encode and put what they changed
 * since the previous commit. Every store of a task that a listener registers with runs all of that store's listeners
 * in their order, whichever store is flushed first; a listener that has nothing pending returns at once. So the
 * processors of a sub-topology register with every store of it (see {@link #register}).
 *
 * <p>Kafka Streams calls {@code flushCache()} on the outermost store of each registered store, in
 * {@code ProcessorStateManager.flushCache()}, from {@code StreamTask.prepareCommit}: before the record collector
 * is flushed and the transaction commits. This relies on that internal order (Kafka Streams 4.x): the topology
 * ITs run the deferral against a real broker with exactly-once, {@code CommitHookStoreTest} pins the order.
 */
public final class CommitHookStore<K, V> extends WrappedStateStore<KeyValueStore<K, V>, K, V>
        implements KeyValueStore<K, V> {

    /** A processor's deferred writes. */
    public interface Listener {
        /** Encodes and puts what changed since the last commit; runs on the stream thread, in a commit. */
        void beforeCommit();
    }

    private record Registered(int order, Listener listener) {}

    private final List<Registered> listeners = new ArrayList<>();

    public CommitHookStore(KeyValueStore<K, V> wrapped) {
        super(wrapped);
    }

    /**
     * Registers {@code listener} with the commit hook of each of {@code stores} (as a processor's context hands
     * them out); lower {@code order} runs first. A store without a hook is ignored (a test's plain store).
     */
    public static void register(int order, Listener listener, StateStore... stores) {
        for (StateStore store : stores) {
            CommitHookStore<?, ?> hook = find(store);
            if (hook != null) {
                hook.listeners.removeIf(r -> r.listener == listener);
                hook.listeners.add(new Registered(order, listener));
                hook.listeners.sort(Comparator.comparingInt(Registered::order));
            }
        }
    }

    /**
     * Registers {@code listener} with the commit hooks of the stores {@code context} hands out under {@code
     * storeNames} (see {@link #register(int, Listener, StateStore...)}).
     *
     * @return those stores, for {@link #unregister}
     */
    public static StateStore[] register(
            int order, Listener listener, ProcessorContext<?, ?> context, List<String> storeNames) {
        StateStore[] stores = new StateStore[storeNames.size()];
        for (int i = 0; i < stores.length; i++) {
            stores[i] = context.getStateStore(storeNames.get(i));
        }
        register(order, listener, stores);
        return stores;
    }

    /** Removes {@code listener} from the hooks of {@code stores}. */
    public static void unregister(Listener listener, StateStore... stores) {
        for (StateStore store : stores) {
            CommitHookStore<?, ?> hook = find(store);
            if (hook != null) {
                hook.listeners.removeIf(r -> r.listener == listener);
            }
        }
    }

    /** The commit hook under a processor context's decorators, or null when the store has none. */
    static CommitHookStore<?, ?> find(StateStore store) {
        StateStore s = store;
        while (s != null) {
            if (s instanceof CommitHookStore<?, ?> hook) {
                return hook;
            }
            s = s instanceof WrappedStateStore<?, ?, ?> w ? w.wrapped() : null;
        }
        return null;
    }

    /** Whether {@code store} writes deferred state on commits (false for a plain store, e.g. in a unit test). */
    public static boolean hooked(StateStore store) {
        return find(store) != null;
    }

    @Override
    public void flushCache() {
        // A listener may forward records that reach another listener's processor (a pass closed by a state cap
        // feeds the host tracker): listeners run in order, so the later one writes what the earlier one caused.
        for (Registered r : List.copyOf(listeners)) {
            r.listener.beforeCommit();
        }
        super.flushCache();
    }

    @Override
    public void close() {
        listeners.clear();
        super.close();
    }

    /**
     * Runs {@code work} as the processor of {@code node} would run it for a record with {@code timestampMs}: its
     * puts and forwards need a current node and a record context, which a commit does not set. Kafka Streams' own
     * cache flush listeners forward the same way. Outside a real task (a mock context) {@code work} just runs.
     */
    public static void asProcessor(
            ProcessorContext<?, ?> context, ProcessorNode<?, ?, ?, ?> node, long timestampMs, Runnable work) {
        if (!(context instanceof InternalProcessorContext<?, ?> internal) || node == null) {
            work.run();
            return;
        }
        ProcessorNode<?, ?, ?, ?> priorNode = internal.currentNode();
        ProcessorRecordContext priorRecord = internal.recordContext();
        internal.setCurrentNode(node);
        internal.setRecordContext(new ProcessorRecordContext(timestampMs, -1L, -1, null, new RecordHeaders()));
        try {
            work.run();
        } finally {
            internal.setRecordContext(priorRecord);
            internal.setCurrentNode(priorNode);
        }
    }

    /** The processor node a processor runs in, captured in its {@code init} (null outside a real task). */
    public static ProcessorNode<?, ?, ?, ?> currentNode(ProcessorContext<?, ?> context) {
        return context instanceof InternalProcessorContext<?, ?> internal ? internal.currentNode() : null;
    }

    /** {@code inner} with a commit hook around each store it builds. */
    public static <K, V> StoreBuilder<KeyValueStore<K, V>> builder(StoreBuilder<KeyValueStore<K, V>> inner) {
        Objects.requireNonNull(inner, "inner");
        return new StoreBuilder<>() {
            @Override
            public StoreBuilder<KeyValueStore<K, V>> withCachingEnabled() {
                inner.withCachingEnabled();
                return this;
            }

            @Override
            public StoreBuilder<KeyValueStore<K, V>> withCachingDisabled() {
                inner.withCachingDisabled();
                return this;
            }

            @Override
            public StoreBuilder<KeyValueStore<K, V>> withLoggingEnabled(Map<String, String> config) {
                inner.withLoggingEnabled(config);
                return this;
            }

            @Override
            public StoreBuilder<KeyValueStore<K, V>> withLoggingDisabled() {
                inner.withLoggingDisabled();
                return this;
            }

            @Override
            public KeyValueStore<K, V> build() {
                return new CommitHookStore<>(inner.build());
            }

            @Override
            public Map<String, String> logConfig() {
                return inner.logConfig();
            }

            @Override
            public boolean loggingEnabled() {
                return inner.loggingEnabled();
            }

            @Override
            public String name() {
                return inner.name();
            }
        };
    }

    // ---- the key-value store, delegated ----

    @Override
    public void put(K key, V value) {
        wrapped().put(key, value);
    }

    @Override
    public V putIfAbsent(K key, V value) {
        return wrapped().putIfAbsent(key, value);
    }

    @Override
    public void putAll(List<KeyValue<K, V>> entries) {
        wrapped().putAll(entries);
    }

    @Override
    public V delete(K key) {
        return wrapped().delete(key);
    }

    @Override
    public V get(K key) {
        return wrapped().get(key);
    }

    @Override
    public KeyValueIterator<K, V> range(K from, K to) {
        return wrapped().range(from, to);
    }

    @Override
    public KeyValueIterator<K, V> reverseRange(K from, K to) {
        return wrapped().reverseRange(from, to);
    }

    @Override
    public KeyValueIterator<K, V> all() {
        return wrapped().all();
    }

    @Override
    public KeyValueIterator<K, V> reverseAll() {
        return wrapped().reverseAll();
    }

    @Override
    public <PS extends org.apache.kafka.common.serialization.Serializer<P>, P> KeyValueIterator<K, V> prefixScan(
            P prefix, PS prefixKeySerializer) {
        return wrapped().prefixScan(prefix, prefixKeySerializer);
    }

    @Override
    public long approximateNumEntries() {
        return wrapped().approximateNumEntries();
    }
}
