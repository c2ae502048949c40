package io.llmprof.streams.processor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.llmprof.agent.service.ServiceFixtures;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.Json;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.service.ServiceConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With commit hooks on its stores, the service processor writes an instance once per commit instead of once per
 * batch (issue 15), and nothing else changes: the same outputs, the same three stores after a commit, and a batch
 * failing half-way undone by replaying the uncommitted ones. A write-through processor (plain stores) runs beside a
 * deferring one (the same kind of stores under {@link CommitHookStore}); a commit is {@code flushCache()}.
 */
class ServiceDeferredWritesTest {
    private static final int PER_BATCH = 500;
    private static List<ServiceBatch> batches;

    @TempDir
    static Path tmp;

    @BeforeAll
    static void synth() throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("svc"));
        ServiceSynth.write(
                new ServiceSynth.Spec(1_500, 1, 1).withTiming(ServiceSynth.Timing.REALISTIC),
                ServiceFixtures.Format.JSONL,
                dir);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(dir, events::add, p -> {
            throw new IllegalStateException(p.toString());
        });
        batches = new ArrayList<>();
        for (int from = 0; from < events.size(); from += PER_BATCH) {
            List<ServiceEvent> part = events.subList(from, Math.min(events.size(), from + PER_BATCH));
            // no end of stream: the analyzer's open requests stay in the stores
            batches.add(new ServiceBatch("job", "inst", "src", from, part, false));
        }
    }

    /** A store that can be told to refuse its n-th read (get or range) from now, once, or its writes. */
    private static final class FailingStore implements KeyValueStore<String, byte[]> {
        final KeyValueStore<String, byte[]> inner;
        int failAt = -1;
        boolean failWrites;

        FailingStore(KeyValueStore<String, byte[]> inner) {
            this.inner = inner;
        }

        @Override
        public byte[] get(String key) {
            read();
            return inner.get(key);
        }

        private void read() {
            if (failAt >= 0 && failAt-- == 0) {
                throw new IllegalStateException("store " + name() + " refuses a read (test)");
            }
        }

        @Override
        public void put(String key, byte[] value) {
            if (failWrites) {
                throw new IllegalStateException("store " + name() + " refuses writes (test)");
            }
            inner.put(key, value);
        }

        @Override
        public byte[] putIfAbsent(String key, byte[] value) {
            return inner.putIfAbsent(key, value);
        }

        @Override
        public void putAll(List<KeyValue<String, byte[]>> entries) {
            inner.putAll(entries);
        }

        @Override
        public byte[] delete(String key) {
            return inner.delete(key);
        }

        @Override
        public KeyValueIterator<String, byte[]> range(String from, String to) {
            read();
            return inner.range(from, to);
        }

        @Override
        public KeyValueIterator<String, byte[]> all() {
            return inner.all();
        }

        @Override
        public long approximateNumEntries() {
            return inner.approximateNumEntries();
        }

        @Override
        public String name() {
            return inner.name();
        }

        @Override
        public void init(StateStoreContext context, StateStore root) {
            inner.init(context, root);
        }

        @Override
        public void close() {
            inner.close();
        }

        @Override
        public boolean persistent() {
            return false;
        }

        @Override
        public boolean isOpen() {
            return inner.isOpen();
        }
    }

    private static final class Run {
        final MockProcessorContext<String, Object> context = new MockProcessorContext<>();
        final List<FailingStore> stores = new ArrayList<>();
        final List<StateStore> added = new ArrayList<>();
        final ServiceProcessor processor;
        long ts = 1_000;

        Run(boolean deferred) {
            context.setCurrentSystemTimeMs(1_700_000_000_000L);
            for (String name : List.of("head", "requests", "order")) {
                FailingStore s = new FailingStore(Stores.keyValueStoreBuilder(
                                Stores.inMemoryKeyValueStore(name), Serdes.String(), Serdes.ByteArray())
                        .withLoggingDisabled()
                        .build());
                StateStore store = deferred ? new CommitHookStore<>(s) : s;
                store.init(context.getStateStoreContext(), store);
                context.addStateStore(store);
                stores.add(s);
                added.add(store);
            }
            processor = new ServiceProcessor(
                    new ServiceConfig(Duration.ofHours(1), 2, 1_000_000, 1024, null),
                    new StreamsMeters(new SimpleMeterRegistry()),
                    new ServiceProcessor.Stores("head", "requests", "order"),
                    new ServiceProcessor.Sinks(
                            "requests", "batches", "forwards", "kv", "states", "pd", "coord", "ep", "moe", "anomalies"),
                    Duration.ofSeconds(30),
                    Duration.ofHours(1),
                    1 << 20);
            processor.init(context);
        }

        void process(ServiceBatch b) {
            processor.process(new Record<>(b.key(), b, ts));
            ts++;
        }

        void commit() {
            ((CommitHookStore<?, ?>) added.get(0)).flushCache();
        }

        List<String> outputs() {
            return context.forwarded().stream()
                    .map(f -> f.childName().orElse("?") + " " + f.record().key() + " "
                            + json(f.record().value()))
                    .toList();
        }

        /**
         * What the stores mean: the head's analyzer state, cursors and counts of open requests and linked ids, the
         * stored request and linked-id keys, and the open requests oldest first (the order store's values by key).
         * Not the bytes: a request touched in several batches of one commit takes one sequence number instead of
         * several, and the scan floor (a hint below which no order key is left) moves at other times.
         */
        List<String> logical() {
            List<String> view = new ArrayList<>();
            byte[] head = stores.get(0).inner.get("job/inst");
            if (head == null) {
                return view;
            }
            try {
                var h = io.llmprof.streams.state.proto.ServiceInstanceState.parseFrom(head);
                view.add("head " + Arrays.toString(h.getHead().toByteArray()));
                view.add("cursors " + h.getCursorSourcesList() + " " + h.getCursorNextList() + " pending "
                        + h.getPending() + " open " + h.getTable().getOpen() + " aliases "
                        + h.getTable().getAliases() + " chunks " + h.getHeadChunks());
            } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                throw new IllegalStateException(e);
            }
            try (KeyValueIterator<String, byte[]> it = stores.get(1).inner.all()) {
                it.forEachRemaining(kv -> view.add("requests " + kv.key.replace('\0', '|')));
            }
            List<String> oldestFirst = new ArrayList<>();
            try (KeyValueIterator<String, byte[]> it = stores.get(2).inner.all()) {
                it.forEachRemaining(
                        kv -> oldestFirst.add(new String(kv.value, java.nio.charset.StandardCharsets.UTF_8)));
            }
            view.add("order " + oldestFirst);
            return view;
        }
    }

    @Test
    void instancesAreWrittenAtCommitsAndEndAsWrittenThrough() {
        assertThat(batches).hasSizeGreaterThan(20);
        Run through = new Run(false);
        Run deferred = new Run(true);
        for (int i = 0; i < batches.size(); i++) {
            through.process(batches.get(i));
            deferred.process(batches.get(i));
            if (i == 0) {
                assertThat(through.logical()).isNotEmpty();
                assertThat(deferred.logical())
                        .as("nothing written before the first commit")
                        .isEmpty();
            }
            if (i % 7 == 6) {
                deferred.commit();
                assertThat(deferred.logical()).isEqualTo(through.logical());
            }
        }
        deferred.commit();
        assertThat(deferred.logical()).isEqualTo(through.logical());
        assertThat(deferred.outputs()).isEqualTo(through.outputs()).hasSizeGreaterThan(1_000);
    }

    @Test
    void aBatchFailingHalfWayIsUndoneByReplayingTheUncommittedOnes() {
        // the stream ends with the last batch: the analyzer finishes it and the instance is written at once
        List<ServiceBatch> ending = new ArrayList<>(batches.subList(0, batches.size() - 1));
        ServiceBatch last = batches.get(batches.size() - 1);
        ending.add(
                new ServiceBatch(last.job(), last.instance(), last.source(), last.firstIndex(), last.events(), true));
        Run through = new Run(false);
        ending.forEach(through::process);

        Run deferred = new Run(true);
        ending.subList(0, 6).forEach(deferred::process);
        deferred.commit();
        ending.subList(6, ending.size() - 1).forEach(deferred::process);
        // The request store refuses the write after the last batch went through the analyzer (it finished every
        // open request): the instance must go back to the committed state plus the batches since, not to the
        // committed state alone (they would be lost), and not keep the failed batch (it would count twice).
        deferred.stores.get(1).failWrites = true;
        assertThatThrownBy(() -> deferred.process(last(ending))).hasMessageContaining("refuses writes");
        deferred.stores.get(1).failWrites = false;
        deferred.process(last(ending));
        deferred.commit();

        assertThat(deferred.outputs()).isEqualTo(through.outputs()).hasSizeGreaterThan(1_000);
        assertThat(deferred.logical()).isEqualTo(through.logical());
    }

    private static ServiceBatch last(List<ServiceBatch> list) {
        return list.get(list.size() - 1);
    }

    private static String json(Object value) {
        try {
            return Json.mapper().writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
