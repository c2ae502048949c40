package io.llmprof.agent.produce;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.SharedData;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.events.JsonSerde;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.service.ServiceBatch;
import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.utils.ByteBufferOutputStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Real traces through the wire format: every batch the agent would send comes back from protobuf equal to itself
 * and to what the former JSON format gave, and takes far fewer bytes. Prints bytes per event of both formats.
 */
class WireFormatRealDataTest {
    /** The record-batch format every current producer writes (magic 2). */
    private static final byte RECORD_BATCH_V2 = 2;

    @ParameterizedTest
    @ValueSource(
            strings = {
                "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
                "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
                "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
                "nvfuser/report1.sqlite"
            })
    void trace_batches_of_real_traces_come_back_equal_in_fewer_bytes(String file) throws Exception {
        Path path = SharedData.file(file);
        List<TraceBatch> batches = new ArrayList<>();
        TraceReaders.read(
                path, ReaderOptions.defaults(), new TraceBatcher("job", "run", path.toString(), batches::add));
        Sizes sizes = roundTrip(batches, Topics.TRACE_EVENTS.valueSerde(), new JsonSerde<>(TraceBatch.class));

        assertThat(sizes.events).isGreaterThan(100);
        System.out.println(sizes.report(file));
        assertThat(sizes.protoBytes * 3).as("protobuf at most a third of JSON").isLessThan(sizes.jsonBytes);
    }

    @ParameterizedTest
    @ValueSource(strings = {"msserviceprofiler-mindie/output/chrome_tracing.json"})
    void service_batches_of_a_real_profile_come_back_equal_in_fewer_bytes(String file) throws Exception {
        Path path = SharedData.file(file);
        List<ServiceEvent> events = new ArrayList<>();
        ServiceReaders.read(path, events::add, p -> {});
        List<ServiceBatch> batches = new ArrayList<>();
        for (int i = 0; i < events.size(); i += 500) {
            List<ServiceEvent> part = events.subList(i, Math.min(events.size(), i + 500));
            batches.add(new ServiceBatch("job", "inst", path.toString(), i, part, i + 500 >= events.size()));
        }
        Sizes sizes = roundTrip(batches, Topics.SERVICE_EVENTS.valueSerde(), new JsonSerde<>(ServiceBatch.class));

        assertThat(sizes.events).isGreaterThan(100);
        System.out.println(sizes.report(file));
        assertThat(sizes.protoBytes * 2).as("protobuf at most half of JSON").isLessThan(sizes.jsonBytes);
    }

    private static <T> Sizes roundTrip(List<T> batches, Serde<T> proto, JsonSerde<T> json) {
        Sizes sizes = new Sizes();
        for (T batch : batches) {
            byte[] bytes = proto.serializer().serialize("t", batch);
            byte[] jsonBytes = json.serializer().serialize("t", batch);
            T back = proto.deserializer().deserialize("t", bytes);
            assertThat(back).isEqualTo(batch);
            assertThat(back).isEqualTo(json.read(jsonBytes));
            sizes.protoBytes += bytes.length;
            sizes.jsonBytes += jsonBytes.length;
            sizes.protoZstd += zstd(bytes);
            sizes.jsonZstd += zstd(jsonBytes);
            sizes.events += batch instanceof TraceBatch t
                    ? t.events().size()
                    : ((ServiceBatch) batch).events().size();
            sizes.batches++;
        }
        return sizes;
    }

    /** Bytes of one value compressed as the agent's producer compresses (a batch holding just that record). */
    private static long zstd(byte[] value) {
        ByteBufferOutputStream buffer = new ByteBufferOutputStream(value.length / 2 + 64);
        try (OutputStream out = Compression.zstd().build().wrapForOutput(buffer, RECORD_BATCH_V2)) {
            out.write(value);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return buffer.position();
    }

    private static final class Sizes {
        long events;
        long batches;
        long jsonBytes;
        long protoBytes;
        long jsonZstd;
        long protoZstd;

        String report(String file) {
            return String.format(
                    "wire size %s: %d events in %d batches, JSON %.1f B/event, protobuf %.1f B/event (%.1fx smaller);"
                            + " zstd per batch: JSON %.1f B/event, protobuf %.1f B/event",
                    file,
                    events,
                    batches,
                    (double) jsonBytes / events,
                    (double) protoBytes / events,
                    (double) jsonBytes / protoBytes,
                    (double) jsonZstd / events,
                    (double) protoZstd / events);
        }
    }
}
