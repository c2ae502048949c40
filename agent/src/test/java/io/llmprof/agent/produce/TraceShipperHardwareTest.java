package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.Fixtures;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.SharedData;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.events.RankHardware;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.view.HardwareView;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where each rank ran goes to llmprof.rank-hardware once, before the rank's first GPU batch. */
class TraceShipperHardwareTest {
    @TempDir
    Path dir;

    private final AgentMeters meters = new AgentMeters(new SimpleMeterRegistry());
    private final List<ProducerRecord<byte[], byte[]>> sent = new ArrayList<>();

    private List<ProducerRecord<byte[], byte[]>> ship(Path file) throws IOException {
        MockProducer<byte[], byte[]> kafka =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer()) {
                    @Override
                    public synchronized Future<RecordMetadata> send(
                            ProducerRecord<byte[], byte[]> record, Callback callback) {
                        sent.add(record);
                        return super.send(record, callback);
                    }
                };
        new TraceShipper(
                        new TraceProducer(kafka, meters),
                        meters,
                        ReaderOptions.defaults(),
                        512,
                        TraceBatcher.DEFAULT_MAX_BATCH_BYTES)
                .ship(file, "job", "run-1", TraceShipper.ShipOptions.fresh());
        return sent;
    }

    private static List<RankHardware> hardware(List<ProducerRecord<byte[], byte[]>> records) {
        return records.stream()
                .filter(r -> r.topic().equals(Topics.RANK_HARDWARE.name()))
                .map(r -> Topics.RANK_HARDWARE.valueSerde().deserializer().deserialize(r.topic(), r.value()))
                .toList();
    }

    /** Position of the first record of that topic, or of the first GPU trace batch; -1: none. */
    private static int firstGpuBatch(List<ProducerRecord<byte[], byte[]>> records) {
        for (int i = 0; i < records.size(); i++) {
            ProducerRecord<byte[], byte[]> r = records.get(i);
            if (r.topic().equals(Topics.TRACE_EVENTS.name())) {
                TraceBatch b = Topics.TRACE_EVENTS.valueSerde().deserializer().deserialize(r.topic(), r.value());
                if (b.lane() == TraceBatch.Lane.GPU) {
                    return i;
                }
            }
        }
        return -1;
    }

    private static int first(List<ProducerRecord<byte[], byte[]>> records, String topic) {
        for (int i = 0; i < records.size(); i++) {
            if (records.get(i).topic().equals(topic)) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void anA100RankOfTwoIsSentOnceBeforeItsFirstGpuBatch() throws IOException {
        // HTA nccl_data: 8 x A100-PG509-200 listed; nccl, rank 0 of world size 2, one default_pg of size 2
        Path file = SharedData.file("hta/nccl_parser_config/nccl_data.json.gz");
        List<ProducerRecord<byte[], byte[]>> records = ship(file);

        List<RankHardware> h = hardware(records);
        assertThat(h).hasSize(1);
        RankHardware r = h.get(0);
        assertThat(r.job()).isEqualTo("job");
        assertThat(r.run()).isEqualTo("run-1");
        assertThat(r.source()).isEqualTo(file.toAbsolutePath().normalize().toString());
        HardwareView v = r.hardware();
        assertThat(v.gpu()).isEqualTo("NVIDIA A100-PG509-200");
        assertThat(v.sms()).isEqualTo(108);
        assertThat(v.memoryBytes()).isEqualTo(42297524224L);
        assertThat(v.devicesListed()).isEqualTo(8);
        assertThat(v.backend()).isEqualTo("nccl");
        assertThat(v.worldSize()).isEqualTo(2);
        assertThat(v.tp()).isNull();
        assertThat(v.tpSource()).startsWith("not stated");
        int at = first(records, Topics.RANK_HARDWARE.name());
        assertThat(new String(records.get(at).key(), StandardCharsets.UTF_8)).isEqualTo("job/" + r.rank());
        assertThat(at).isLessThan(firstGpuBatch(records)).isGreaterThanOrEqualTo(0);
    }

    @Test
    void aRocmRankNamesTheOneListedModelWithANote() throws IOException {
        // TraceLens SGLang decode: kernels on device 9, deviceProperties lists id 0 (AMD Instinct MI300X)
        RankHardware r = hardware(
                        ship(SharedData.file("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz")))
                .get(0);
        assertThat(r.hardware().device()).isEqualTo(9);
        assertThat(r.hardware().gpu()).isEqualTo("AMD Instinct MI300X");
        assertThat(r.hardware().gpuNote()).contains("ROCm");
        assertThat(r.hardware().tp()).isEqualTo(1);
    }

    @Test
    void aTraceWithoutDevicePropertiesSaysSoAndATraceWithoutGpuActivitySendsNothing() throws IOException {
        Path withKernels = Fixtures.write(dir, "rank0.json", Fixtures.traceWithBadEvents(50, 0));
        List<RankHardware> h = hardware(ship(withKernels));
        assertThat(h).hasSize(1);
        assertThat(h.get(0).hardware().gpu()).isNull();
        assertThat(h.get(0).hardware().gpuNote()).isEqualTo("the trace has no deviceProperties");

        sent.clear();
        Path hostOnly = Fixtures.write(
                dir,
                "host.json",
                "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,"
                        + "\"ts\":1.0,\"dur\":2.0}]}");
        assertThat(hardware(ship(hostOnly))).isEmpty();
        assertThat(first(sent, Topics.TRACE_EVENTS.name())).isGreaterThanOrEqualTo(0);
    }
}
