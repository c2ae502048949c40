package io.llmprof.agent.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.events.Topics;
import io.llmprof.events.service.ServiceBatch;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Batching, indexes and end-of-stream of shipped files (the producer's records; the broker IT is in deploy). */
class ServiceShipperTest {
    @TempDir
    Path dir;

    private final MockProducer<byte[], byte[]> mock =
            new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final ServiceShipper shipper =
            new ServiceShipper(new TraceProducer(mock, new AgentMeters(registry)), new AgentMeters(registry), 5);

    private List<ServiceBatch> batches() {
        return mock.history().stream()
                .filter(r -> r.topic().equals(Topics.SERVICE_EVENTS.name()))
                .map(ServiceShipperTest::batch)
                .toList();
    }

    private static ServiceBatch batch(ProducerRecord<byte[], byte[]> r) {
        assertThat(new String(r.key(), StandardCharsets.UTF_8)).isEqualTo("job/inst");
        return Topics.SERVICE_EVENTS.valueSerde().deserializer().deserialize(r.topic(), r.value());
    }

    @Test
    void shipsAFileInBatchesWithIndexesFromZeroAndEndOfStreamLast() throws Exception {
        // requeued: 12 events -> batches of 5, 5, then 2 with endOfStream
        ServiceFixtures.Fixture f = ServiceFixtures.requeued();
        ServiceFixtures.write(f, ServiceFixtures.Format.SLICE, dir);
        Path input = dir.resolve(f.name());
        ServiceShipper.Result r = shipper.shipFile(input, "job", "inst");
        assertThat(r).isEqualTo(new ServiceShipper.Result(12, 3, 0, "slice", 0));
        List<ServiceBatch> b = batches();
        assertThat(b).extracting(ServiceBatch::firstIndex).containsExactly(0L, 5L, 10L);
        assertThat(b).extracting(x -> x.events().size()).containsExactly(5, 5, 2);
        assertThat(b).extracting(ServiceBatch::endOfStream).containsExactly(false, false, true);
        assertThat(b).allSatisfy(x -> assertThat(x.source()).isEqualTo(input.toString()));
        assertThat(b.stream().flatMap(x -> x.events().stream()).toList()).isEqualTo(f.events());
        assertThat(registry.get(AgentMeters.SERVICE_EVENTS).counter().count()).isEqualTo(12.0);
    }

    @Test
    void aFileOfExactlyFullBatchesEndsWithAnEmptyEndOfStreamBatch() throws Exception {
        // kv_cache has 5 events: one full batch, then an empty one that only says the stream ended
        ServiceFixtures.write(ServiceFixtures.kvCache(), ServiceFixtures.Format.JSONL, dir);
        shipper.shipFile(dir.resolve("kv_cache"), "job", "inst");
        assertThat(batches()).extracting(x -> x.events().size()).containsExactly(5, 0);
        assertThat(batches()).extracting(ServiceBatch::firstIndex).containsExactly(0L, 5L);
        assertThat(batches().get(1).endOfStream()).isTrue();
    }

    @Test
    void indexesContinuePerSourceAndInstanceAcrossCalls() {
        List<io.llmprof.events.service.ServiceEvent> three =
                ServiceFixtures.kvCache().events().subList(0, 3);
        shipper.ship("job", "inst", "http:a", three, false);
        shipper.ship("job", "inst", "http:a", three, false);
        shipper.ship("job", "inst", "http:b", three, false);
        assertThat(batches()).extracting(ServiceBatch::firstIndex).containsExactly(0L, 3L, 0L);
    }

    @Test
    void sequencesAreBoundedAndAPairThatComesBackAfterBeingForgottenStartsUnderANewSourceName() {
        List<io.llmprof.events.service.ServiceEvent> one =
                ServiceFixtures.kvCache().events().subList(0, 1);
        shipper.ship("job", "inst", "http:0", one, false);
        shipper.ship("job", "inst", "http:busy", one, false);
        for (int i = 1; i <= ServiceShipper.MAX_SEQUENCES; i++) {
            shipper.ship("job", "inst", "http:" + i, one, false);
            if (i % 1000 == 0) {
                shipper.ship("job", "inst", "http:busy", one, false); // in use: kept
            }
        }
        mock.clear();
        shipper.ship("job", "inst", "http:0", one, false); // forgotten: a new name, from 0
        shipper.ship("job", "inst", "http:busy", one, false);
        shipper.ship("job", "inst", "http:0", one, false);

        assertThat(batches())
                .extracting(ServiceBatch::source, ServiceBatch::firstIndex)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("http:0#2", 0L),
                        org.assertj.core.groups.Tuple.tuple("http:busy", 5L),
                        org.assertj.core.groups.Tuple.tuple("http:0#2", 1L));
    }

    @Test
    void aFileOfManyBadLinesGetsOneDeadLetterAndOneAnomalyPerChunkWhileEveryLineIsCounted() throws Exception {
        StringBuilder b = new StringBuilder("{\"v\":1,\"ts_ns\":1,\"name\":\"httpReq\",\"rid\":\"r1\"}\n");
        for (int i = 0; i < 2 * ServiceShipper.CHUNK_PROBLEMS + 500; i++) {
            b.append("not json ").append(i).append('\n');
        }
        Path input = java.nio.file.Files.writeString(dir.resolve("bad.jsonl"), b);

        ServiceShipper.Result r = shipper.shipFile(input, "job", "inst");

        assertThat(r.problems()).isEqualTo(2 * ServiceShipper.CHUNK_PROBLEMS + 500);
        assertThat(r.events()).isEqualTo(1);
        List<ProducerRecord<byte[], byte[]>> dead = mock.history().stream()
                .filter(x -> x.topic().equals(Topics.DLQ.name()))
                .toList();
        assertThat(dead).hasSize(3);
        assertThat(new String(dead.get(0).value(), StandardCharsets.UTF_8).lines())
                .hasSize(BadLines.EXAMPLES);
        assertThat(new String(
                        dead.get(2)
                                .headers()
                                .lastHeader("__streams.errors.message")
                                .value(),
                        StandardCharsets.UTF_8))
                .startsWith("500 bad line(s) in one chunk of the file");
        assertThat(mock.history().stream().filter(x -> x.topic().equals(Topics.ANOMALIES.name())))
                .hasSize(3);
        assertThat(registry.get(AgentMeters.BAD_INPUT).counters().stream()
                        .mapToDouble(c -> c.count())
                        .sum())
                .isEqualTo(2 * ServiceShipper.CHUNK_PROBLEMS + 500);
    }
}
