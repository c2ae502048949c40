package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.kineto.Fixtures;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.events.KafkaConnection;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18: no batch is ever skipped. A send Kafka does not take is what the real producer does when the topic is
 * "not present in metadata after max.block.ms" or its buffer is full: it calls back with a TimeoutException inside
 * send() and returns a failed future. The old agent went on with the next batch.
 */
class DeliveryTest {
    private static final Duration DEADLINE = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    private final AgentMeters meters = new AgentMeters(new SimpleMeterRegistry());

    /**
     * Kafka as the agent sees it: rejects sends while {@code down} says so, as the real producer does, and
     * acknowledges at once otherwise (or, with {@code hold}, only on {@link #completeNext()}).
     */
    private static class Broker extends MockProducer<byte[], byte[]> {
        volatile Predicate<ProducerRecord<byte[], byte[]>> down = r -> false;
        final AtomicInteger rejected = new AtomicInteger();

        Broker(boolean autoComplete) {
            super(autoComplete, null, new ByteArraySerializer(), new ByteArraySerializer());
        }

        @Override
        public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> record, Callback callback) {
            if (down.test(record)) {
                rejected.incrementAndGet();
                TimeoutException e =
                        new TimeoutException("Topic " + record.topic() + " not present in metadata after 5000 ms.");
                callback.onCompletion(null, e);
                return CompletableFuture.failedFuture(e);
            }
            return super.send(record, callback);
        }

        @Override
        public synchronized void flush() {
            // acknowledgements come only from the test (completeNext) or at once (autoComplete)
        }

        List<Long> firstIndexes() {
            return history().stream()
                    .filter(r -> r.topic().equals(Topics.TRACE_EVENTS.name()))
                    .map(r -> Topics.TRACE_EVENTS.valueSerde().deserializer().deserialize(r.topic(), r.value()))
                    .map(TraceBatch::firstIndex)
                    .toList();
        }
    }

    private static TraceBatch batch(long first) {
        return new TraceBatch(
                "job", "run", "0", Lane.GPU, "f", first, List.of(TraceEvent.kernel("k", first, 1, 0, 7)), false);
    }

    private static long firstIndex(ProducerRecord<byte[], byte[]> r) {
        return Topics.TRACE_EVENTS
                .valueSerde()
                .deserializer()
                .deserialize(r.topic(), r.value())
                .firstIndex();
    }

    @Test
    void aSendKafkaDidNotTakeIsRetriedBeforeAnythingLaterAndNothingIsSkipped() {
        Broker kafka = new Broker(true);
        AtomicInteger refusals = new AtomicInteger(3);
        // batch 1 meets the outage: three sends of it are refused
        kafka.down = r -> firstIndex(r) == 1 && refusals.getAndDecrement() > 0;
        TraceProducer p = new TraceProducer(kafka, meters, TraceProducer.Delivery.untilAcknowledged(null));
        List<Exception> outcomes = new ArrayList<>();

        for (long i = 0; i < 4; i++) {
            p.send(batch(i), new TraceProducer.Tracker("f"), outcomes::add);
        }
        p.flush();

        assertThat(kafka.rejected).hasValue(3);
        assertThat(kafka.firstIndexes()).containsExactly(0L, 1L, 2L, 3L);
        assertThat(outcomes).hasSize(4).containsOnlyNulls();
    }

    @Test
    void failFastReportsARejectedSendAsBefore() {
        Broker kafka = new Broker(true);
        kafka.down = r -> true;
        TraceProducer p = new TraceProducer(kafka, meters, TraceProducer.Delivery.FAIL_FAST);
        p.send(batch(0));
        assertThatThrownBy(p::flush).isInstanceOf(DeliveryException.class).hasMessageContaining("not present");
        assertThat(kafka.rejected).hasValue(1);
    }

    @Test
    void aRecordKafkaRefusesForGoodIsNotRetried() {
        Broker kafka = new Broker(true) {
            @Override
            public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> r, Callback callback) {
                RecordTooLargeException e = new RecordTooLargeException("too large");
                callback.onCompletion(null, e);
                return CompletableFuture.failedFuture(e);
            }
        };
        TraceProducer p = new TraceProducer(kafka, meters, TraceProducer.Delivery.untilAcknowledged(null));
        TraceProducer.Tracker tracker = new TraceProducer.Tracker("f");
        p.send(batch(0), tracker, TraceProducer.Outcome.NONE);
        p.awaitAcknowledged();
        assertThatThrownBy(tracker::check).isInstanceOf(DeliveryException.class).hasMessageContaining("too large");
    }

    @Test
    void waitsForAnAcknowledgementWithoutALimitAndSaysHowLong() throws Exception {
        Broker kafka = new Broker(false);
        TraceProducer p = new TraceProducer(kafka, meters, TraceProducer.Delivery.untilAcknowledged(null));
        p.send(batch(0));
        CompletableFuture<Void> flushed = CompletableFuture.runAsync(p::flush);

        // a timed wait on the flush itself: still waiting after the notice threshold
        assertThatThrownBy(() -> flushed.get(
                        TraceProducer.WAITING_NOTICE.toMillis() + 200, java.util.concurrent.TimeUnit.MILLISECONDS))
                .isInstanceOf(java.util.concurrent.TimeoutException.class);
        assertThat(p.waitingFor()).isGreaterThanOrEqualTo(TraceProducer.WAITING_NOTICE);
        assertThat(kafka.completeNext()).isTrue();
        flushed.get(DEADLINE.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
        assertThat(p.waitingFor()).isZero();
    }

    @Test
    void givesUpAfterTheBudgetAndForGood() {
        Broker kafka = new Broker(false);
        TraceProducer p =
                new TraceProducer(kafka, meters, TraceProducer.Delivery.untilAcknowledged(Duration.ofMillis(300)));
        p.send(batch(0));

        assertThatThrownBy(p::flush)
                .isInstanceOf(GaveUpException.class)
                .hasMessageContaining("no acknowledgement from Kafka");
        assertThat(p.gaveUp()).isTrue();
        assertThat(kafka.closed())
                .as("closed at once: nothing it held reaches Kafka later")
                .isTrue();
        assertThatThrownBy(() -> p.send(batch(1))).isInstanceOf(GaveUpException.class);
    }

    /**
     * A batch Kafka took and keeps refusing with a retriable error (here NOT_ENOUGH_REPLICAS) never calls back while
     * the delivery timeout is infinite; what Kafka answers reaches the agent only as its I/O thread's log line. The
     * give-up report names it, and only an answer heard during this wait.
     */
    @Test
    void theGiveUpReportSaysWhatKafkaAnswersWhileItRetriesByItself() {
        ProducerRetries.clear();
        Broker kafka = new Broker(false);
        kafka.setMockMetrics(
                new org.apache.kafka.common.MetricName(
                        "record-retry-total", "producer-metrics", "", Map.of("client-id", "agent-7")),
                null);
        // heard before the wait: not this wait's answer
        ProducerRetries.heardFromSender("[Producer clientId=agent-7] Got error produce response with correlation id 3"
                + " on topic-partition old-0, retrying (2147483646 attempts left). Error: NOT_LEADER_OR_FOLLOWER");
        TraceProducer p =
                new TraceProducer(kafka, meters, TraceProducer.Delivery.untilAcknowledged(Duration.ofMillis(300)));
        p.send(batch(0));
        String retry = "[Producer clientId=agent-7] Got error produce response with correlation id 9 on"
                + " topic-partition llmprof.traces-3, retrying (2147483645 attempts left). Error: NOT_ENOUGH_REPLICAS";
        ProducerRetries.heardFromSender(retry);
        ProducerRetries.heardFromSender(retry);
        // another producer's answer is not this one's
        ProducerRetries.heardFromSender("[Producer clientId=streams-1] Got error produce response with correlation"
                + " id 1 on topic-partition x-0, retrying (5 attempts left). Error: UNKNOWN_SERVER_ERROR");

        assertThatThrownBy(p::flush)
                .isInstanceOf(GaveUpException.class)
                .hasMessageContaining("no acknowledgement from Kafka")
                .hasMessageEndingWith("; Kafka answers NOT_ENOUGH_REPLICAS on llmprof.traces-3 (2 times in a row)");
    }

    @Test
    void aWaitWithNoAnswerHeardSaysNothingMore() {
        ProducerRetries.clear();
        ProducerRetries.heardFromSender("[Producer clientId=agent-8] Got error produce response with correlation id 3"
                + " on topic-partition old-0, retrying (2147483646 attempts left). Error: NOT_LEADER_OR_FOLLOWER");
        Broker kafka = new Broker(false);
        kafka.setMockMetrics(
                new org.apache.kafka.common.MetricName(
                        "record-retry-total", "producer-metrics", "", Map.of("client-id", "agent-8")),
                null);
        TraceProducer p =
                new TraceProducer(kafka, meters, TraceProducer.Delivery.untilAcknowledged(Duration.ofMillis(300)));
        p.send(batch(0));
        assertThatThrownBy(p::flush).isInstanceOf(GaveUpException.class).hasMessageEndingWith("(--give-up-after 0 s)");
    }

    @Test
    void givesUpWhileKafkaRefusesEverySend() {
        Broker kafka = new Broker(true);
        kafka.down = r -> true;
        TraceProducer p =
                new TraceProducer(kafka, meters, TraceProducer.Delivery.untilAcknowledged(Duration.ofMillis(300)));
        assertThatThrownBy(() -> p.send(batch(0)))
                .isInstanceOf(GaveUpException.class)
                .hasMessageContaining("not present in metadata");
        assertThat(kafka.history()).isEmpty();
    }

    @Test
    void theRetryingProducerHasNoDeliveryTimeoutAndRefusesOneFromTheConfigFile() {
        Map<String, Object> c = TraceProducer.producerConfig(KafkaConnection.of("localhost:9092"), "x");
        assertThat(c)
                .containsEntry(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Integer.MAX_VALUE)
                .containsEntry(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        assertThatThrownBy(() -> TraceProducer.producerConfig(
                        KafkaConnection.of("localhost:9092", Map.of("delivery.timeout.ms", "60000")), "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("delivery.timeout.ms")
                .hasMessageContaining("--give-up-after");
        assertThat(TraceProducer.producerConfig(
                        KafkaConnection.of("localhost:9092"), "x", TraceProducer.Delivery.FAIL_FAST))
                .containsEntry(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
    }

    /**
     * The broker goes away after 5 acknowledged batches and the agent gives up: it stops at the first
     * unacknowledged batch, says per rank and lane what was acknowledged of how many, the checkpoint gets exactly
     * that, and a second shipping from it sends the rest: every index once, in order.
     */
    @Test
    void givingUpStopsAtTheFirstUnacknowledgedBatchAndAResumeSendsExactlyTheRest() throws Exception {
        Path file = Fixtures.write(dir, "rank0.json", Fixtures.traceWithBadEvents(300, 0));
        Broker kafka = new Broker(true);
        AtomicInteger sent = new AtomicInteger();
        kafka.down = r -> r.topic().equals(Topics.TRACE_EVENTS.name()) && sent.incrementAndGet() > 5;
        TraceProducer p =
                new TraceProducer(kafka, meters, TraceProducer.Delivery.untilAcknowledged(Duration.ofMillis(300)));
        TraceShipper shipper = new TraceShipper(
                p,
                meters,
                ReaderOptions.defaults().withInterleavedLanes(true),
                32,
                TraceBatcher.DEFAULT_MAX_BATCH_BYTES);
        List<LaneIndexes> checkpoints = new ArrayList<>();
        TraceShipper.ShipOptions options =
                new TraceShipper.ShipOptions(LaneIndexes.NONE, 0, 2, null, (a, n) -> checkpoints.add(a), null);

        TraceShipper.ShipFailedException e = org.junit.jupiter.api.Assertions.assertThrows(
                TraceShipper.ShipFailedException.class, () -> shipper.ship(file, "job", "run", options));

        assertThat(e.gaveUp()).isTrue();
        TraceShipper.Result partial = e.partial();
        long acked = partial.acknowledged().total();
        assertThat(acked).as("5 batches of 32 went through before the outage").isEqualTo(5 * 32);
        assertThat(acked)
                .isEqualTo(kafka.history().stream()
                        .mapToLong(r -> Topics.TRACE_EVENTS
                                .valueSerde()
                                .deserializer()
                                .deserialize(r.topic(), r.value())
                                .events()
                                .size())
                        .sum());
        // 300 (cpu_op, kernel) pairs: 300 host and 300 GPU events, read to the end although sending stopped
        assertThat(partial.seen().total()).isEqualTo(600);
        assertThat(partial.lanes())
                .containsExactly(
                        "rank 0 GPU: events acknowledged up to index "
                                + partial.acknowledged().get("0", Lane.GPU) + " of 300",
                        "rank 0 HOST: events acknowledged up to index "
                                + partial.acknowledged().get("0", Lane.HOST) + " of 300");
        assertThat(checkpoints.get(checkpoints.size() - 1)).isEqualTo(partial.acknowledged());

        // the broker is back: a new agent resumes from the checkpoint
        Broker back = new Broker(true);
        TraceProducer again = new TraceProducer(back, meters, TraceProducer.Delivery.untilAcknowledged(null));
        TraceShipper.Result rest = new TraceShipper(
                        again,
                        meters,
                        ReaderOptions.defaults().withInterleavedLanes(true),
                        32,
                        TraceBatcher.DEFAULT_MAX_BATCH_BYTES)
                .ship(file, "job", "run", new TraceShipper.ShipOptions(partial.acknowledged(), 0, 2, null, null, null));
        assertThat(rest.eventsSent()).isEqualTo(600 - acked);
        List<String> ids = new ArrayList<>();
        List<ProducerRecord<byte[], byte[]>> topic = new ArrayList<>(kafka.history());
        topic.addAll(back.history());
        for (ProducerRecord<byte[], byte[]> r : topic) {
            if (!r.topic().equals(Topics.TRACE_EVENTS.name())) {
                continue; // the rank's hardware record
            }
            TraceBatch b = Topics.TRACE_EVENTS.valueSerde().deserializer().deserialize(r.topic(), r.value());
            for (int i = 0; i < b.events().size(); i++) {
                ids.add(b.lane() + "|" + (b.firstIndex() + i));
            }
        }
        for (Lane lane : Lane.values()) {
            assertThat(ids.stream()
                            .filter(s -> s.startsWith(lane + "|"))
                            .map(s -> Long.parseLong(s.substring(s.indexOf('|') + 1)))
                            .toList())
                    .as("%s indexes on the topic: each once, in order", lane)
                    .isEqualTo(java.util.stream.LongStream.range(0, 300).boxed().toList());
        }
    }
}
