package io.llmprof.streams.processor;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;

/**
 * Pins the Kafka Streams internals {@link CommitHookStore} relies on, so that an upgrade that changes them fails
 * here: on a commit, {@code flushCache()} reaches the hook of the outermost store before the caching layer sends its
 * dirty entries to the changelog, so a value put by the hook goes out in the same commit; and a record forwarded
 * from the hook (with {@link CommitHookStore#asProcessor}) reaches the sink in that commit too.
 */
class CommitHookStoreTest {
    private static final String STORE = "deferred";
    private static final String CHANGELOG = "hook-test-" + STORE + "-changelog";

    /** Counts records per key in memory and writes the counts only when the task commits. */
    static final class CountAtCommit implements Processor<String, String, String, String> {
        private final Map<String, Long> dirty = new java.util.LinkedHashMap<>();
        private ProcessorContext<String, String> context;
        private org.apache.kafka.streams.processor.internals.ProcessorNode<?, ?, ?, ?> node;
        private KeyValueStore<String, Long> store;
        private long lastTs;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.node = CommitHookStore.currentNode(context);
            this.store = context.getStateStore(STORE);
            assertThat(CommitHookStore.hooked(store)).isTrue();
            CommitHookStore.register(1, this::atCommit, store);
        }

        @Override
        public void process(Record<String, String> record) {
            Long stored = store.get(record.key());
            dirty.merge(record.key(), (stored == null ? 0 : stored) + 1, (a, b) -> a + 1);
            lastTs = record.timestamp();
        }

        private void atCommit() {
            List<Map.Entry<String, Long>> changed = new ArrayList<>(dirty.entrySet());
            dirty.clear();
            for (Map.Entry<String, Long> e : changed) {
                CommitHookStore.asProcessor(context, node, lastTs, () -> {
                    store.put(e.getKey(), e.getValue());
                    context.forward(new Record<>(e.getKey(), "written " + e.getValue(), lastTs));
                });
            }
        }
    }

    @Test
    void aPutAndAForwardFromTheHookGoOutInTheCommitThatRanIt() {
        Topology topology = new Topology();
        topology.addSource("in", new StringDeserializer(), new StringDeserializer(), "input");
        topology.addProcessor("count", CountAtCommit::new, "in");
        topology.addStateStore(
                CommitHookStore.builder(Stores.keyValueStoreBuilder(
                                Stores.persistentKeyValueStore(STORE), Serdes.String(), Serdes.Long()))
                        .withCachingEnabled()
                        .withLoggingEnabled(Map.of()),
                "count");
        topology.addSink("out", "output", new StringSerializer(), new StringSerializer(), "count");
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "hook-test");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props)) {
            TestInputTopic<String, String> in =
                    driver.createInputTopic("input", new StringSerializer(), new StringSerializer());
            TestOutputTopic<String, Long> changelog = driver.createOutputTopic(
                    CHANGELOG, new StringDeserializer(), Serdes.Long().deserializer());
            TestOutputTopic<String, String> out =
                    driver.createOutputTopic("output", new StringDeserializer(), new StringDeserializer());
            // The test driver commits after every record: each record's count must be in the changelog and in the
            // output right after it, though the processor wrote nothing while processing it.
            for (int i = 1; i <= 3; i++) {
                in.pipeInput("a", "x" + i);
                assertThat(changelog.readKeyValuesToList())
                        .as("changelog after record %d", i)
                        .containsExactly(org.apache.kafka.streams.KeyValue.pair("a", (long) i));
                assertThat(out.readValuesToList()).containsExactly("written " + i);
            }
            KeyValueStore<String, Long> store = driver.getKeyValueStore(STORE);
            assertThat(store.get("a")).isEqualTo(3L);
        }
    }
}
