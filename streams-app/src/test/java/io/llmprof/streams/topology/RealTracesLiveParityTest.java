package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.produce.TraceShipper;
import io.llmprof.events.Json;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Topics;
import io.llmprof.events.view.PassView;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.offline.AnalyzeCommand;
import io.llmprof.streams.support.SharedData;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every real Kineto trace of ../shared/data the live way: the agent's shipper (reader, lanes interleaved by time,
 * batches of 2,048 events, the protobuf wire format) into the streams topology (TopologyTestDriver, its state stores
 * and commits), against `analyze layers --format json` of the same file with the same model config. Each pass the
 * topology closes, with its layers, must render to exactly the JSON pass `analyze layers` prints (the dashboard's
 * REST pass is the same rendering), and each rank must have the same passes.
 */
class RealTracesLiveParityTest {
    @TempDir
    Path tmp;

    @ParameterizedTest(name = "{0}: {2} passes, {3} layers")
    @CsvSource(
            nullValues = "-",
            value = {
                "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz, model-configs/Qwen--Qwen3-8B_config.json, 1, 36",
                "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz, model-configs/Qwen--Qwen3-8B_config.json, 1, 36",
                "tracelens/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz, -, 0, 0",
                "tracelens/inference/vllm_decode_full/graph_execution.json.gz, -, 1, 24",
                "tracelens/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz, -, 0, 0",
                "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz, -, 1, 24",
                "tracelens/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz, -, 1, 24",
                "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz, -, 1, 24",
                "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz, -, 1, 24",
                "tracelens/mi210/gpu_only_trace/gpu_only_trace.json.gz, -, 30, 59",
                "nano-vllm/forward_50.json, -, 0, 0",
                "nano-vllm/profile_results/decode_gpu_0.json, -, 0, 0",
                "nano-vllm/profile_results/decode_gpu_100.json, -, 0, 0",
                "nano-vllm/store_kvcache.json, -, 0, 0",
                "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz, -, 1, 0",
                "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz, -, 0, 0",
                "hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz, -, 0, 0",
                "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz, -, 0, 0",
                "hta/df_index_resolver/df_index_resolver.json.gz, -, 5, 0",
                "hta/mtia_inference_trace/mtia_inference_rank_0.json.gz, -, 0, 0",
                "hta/mtia_trace_single_rank/mtia_rank_0.json.gz, -, 0, 0",
                "hta/nccl_parser_config/nccl_data.json.gz, -, 3, 0",
                "hta/negative_queue_length_values_check/rank0.json.gz, -, 5, 0",
                "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz, -, 5, 0",
                "hta/trace_diff/control/control.json.gz, -, 6, 0",
                "hta/trace_diff/test/test.json.gz, -, 6, 0",
                "hta/trace_filter/sampled_rank-0.json.gz, -, 2, 0",
                "hta/trace_filter/sampled_rank-1.json.gz, -, 2, 0",
                "hta/triton_example/triton_example.json.gz, -, 0, 0",
            })
    void theTopologyClosesTheSamePassesAndLayersAsAnalyzeLayers(String trace, String model, int passes, int layers)
            throws IOException {
        Path file = SharedData.file(trace);
        Path config = model == null ? null : SharedData.file(model);
        JsonNode offline = analyzeLayers(file, config);
        // what `analyze layers` gives today (RealTracesTest, TrainingTracesTest and others check why), so that an
        // analysis that found nothing on both sides cannot pass for one that agrees
        int offlinePasses = 0;
        int offlineLayers = 0;
        for (JsonNode rank : offline.path("ranks")) {
            for (JsonNode pass : rank.get("passes")) {
                offlinePasses++;
                offlineLayers += pass.get("layers").size();
            }
        }
        assertThat(offlinePasses).as("offline passes").isEqualTo(passes);
        assertThat(offlineLayers).as("offline layers").isEqualTo(layers);
        assertSame(offline, live(file, config, TraceBatcher.DEFAULT_BATCH_EVENTS, "default"));
        // Small batches: the host lane's events reach the segmenter in other slices against the GPU lane's, and
        // every step spans many records.
        assertSame(offline, live(file, config, 61, "small"));
    }

    private static void assertSame(JsonNode offline, Map<String, List<JsonNode>> live) {

        Map<String, List<JsonNode>> expected = new TreeMap<>();
        for (JsonNode rank : offline.path("ranks")) {
            List<JsonNode> passes = new ArrayList<>();
            rank.get("passes").forEach(passes::add);
            if (!passes.isEmpty()) {
                expected.put(rank.get("rank").asText(), passes);
            }
        }
        assertThat(live.keySet()).as("ranks with passes").isEqualTo(expected.keySet());
        for (Map.Entry<String, List<JsonNode>> e : expected.entrySet()) {
            List<JsonNode> got = live.get(e.getKey());
            assertThat(got).as("rank %s: passes", e.getKey()).hasSameSizeAs(e.getValue());
            for (int i = 0; i < got.size(); i++) {
                assertThat(got.get(i))
                        .as("rank %s pass %d", e.getKey(), i)
                        .isEqualTo(e.getValue().get(i));
            }
        }
    }

    /** `analyze layers --format json` of the file, in this JVM. */
    private static JsonNode analyzeLayers(Path file, Path config) throws IOException {
        List<String> args = new ArrayList<>(List.of("layers", "--trace", file.toString(), "--format", "json"));
        if (config != null) {
            args.addAll(List.of("--config", config.toString()));
        }
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = AnalyzeCommand.commandLine()
                .setOut(new PrintWriter(out))
                .setErr(new PrintWriter(err))
                .execute(args.toArray(String[]::new));
        if (exit != 0 && err.toString().contains("no GPU kernels, memcpy or memset: no passes")) {
            return Json.mapper().createObjectNode(); // no ranks: the live path must close no pass either
        }
        assertThat(exit).as("analyze layers exit; stderr: %s", err).isZero();
        return Json.mapper().readTree(out.toString());
    }

    /** Per rank, the passes the topology closed (in order), each rendered with its layers as the REST API does. */
    private Map<String, List<JsonNode>> live(Path file, Path config, int batchEvents, String stateDir)
            throws IOException {
        AgentMeters agentMeters = new AgentMeters(new SimpleMeterRegistry());
        MockProducer<byte[], byte[]> kafka =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        new TraceShipper(
                        new TraceProducer(kafka, agentMeters),
                        agentMeters,
                        ReaderOptions.defaults(),
                        batchEvents,
                        TraceBatcher.DEFAULT_MAX_BATCH_BYTES)
                .ship(file, "job", "run", TraceShipper.ShipOptions.fresh());

        StreamsAppConfig app = StreamsAppConfig.builder("unused:9092")
                .stateDir(tmp.resolve(stateDir))
                .modelConfig(config)
                .build();
        StreamsMeters meters = new StreamsMeters(new SimpleMeterRegistry());
        Instant start = Instant.parse("2026-01-01T00:00:00Z");
        Map<String, PassRecord> passes = new TreeMap<>();
        Map<String, List<LayerRecord>> layers = new TreeMap<>();
        try (TopologyTestDriver driver = new TopologyTestDriver(
                TopologyFactory.build(app, meters), TopologyFactory.streamsProperties(app, meters), start)) {
            TestInputTopic<byte[], byte[]> in = driver.createInputTopic(
                    Topics.TRACE_EVENTS.name(), new ByteArraySerializer(), new ByteArraySerializer());
            TestOutputTopic<String, PassRecord> passOut = driver.createOutputTopic(
                    Topics.PASSES.name(),
                    new StringDeserializer(),
                    Topics.PASSES.valueSerde().deserializer());
            TestOutputTopic<String, LayerRecord> layerOut = driver.createOutputTopic(
                    Topics.LAYERS.name(),
                    new StringDeserializer(),
                    Topics.LAYERS.valueSerde().deserializer());
            long ts = start.toEpochMilli();
            for (ProducerRecord<byte[], byte[]> r : kafka.history()) {
                if (r.topic().equals(Topics.TRACE_EVENTS.name())) {
                    in.pipeInput(r.key(), r.value(), ts++);
                }
            }
            driver.advanceWallClockTime(Duration.ofMinutes(10)); // idle punctuations: they must change nothing
            for (TestRecord<String, PassRecord> r : passOut.readRecordsToList()) {
                PassRecord p = r.value();
                passes.put(p.rank() + "\u0000" + String.format("%012d", p.index()), p);
            }
            for (TestRecord<String, LayerRecord> r : layerOut.readRecordsToList()) {
                LayerRecord l = r.value();
                layers.computeIfAbsent(
                                l.rank() + "\u0000" + String.format("%012d", l.passIndex()), k -> new ArrayList<>())
                        .add(l);
            }
        }
        Map<String, List<JsonNode>> byRank = new TreeMap<>();
        for (Map.Entry<String, PassRecord> e : passes.entrySet()) {
            List<LayerRecord> mine = new ArrayList<>(layers.getOrDefault(e.getKey(), List.of()));
            mine.sort(java.util.Comparator.comparingInt(LayerRecord::layer));
            byRank.computeIfAbsent(e.getValue().rank(), k -> new ArrayList<>())
                    .add(Harness.reparse(PassView.of(e.getValue(), mine)));
        }
        return byRank;
    }
}
