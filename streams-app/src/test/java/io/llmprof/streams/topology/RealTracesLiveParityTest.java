package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.metrics.AgentMeters;
import io.llmprof.agent.produce.TraceBatcher;
import io.llmprof.agent.produce.TraceProducer;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.agent.produce.TraceShipper;
import io.llmprof.events.CrossRankPass;
import io.llmprof.events.Json;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Topics;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.events.view.CrossRankView;
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
import java.util.Comparator;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every real trace of ../shared/data the live way: the agent's shipper (reader, lanes interleaved by time, batches of
 * 2,048 and of 61 events, the protobuf wire format) into the streams topology (TopologyTestDriver, its state stores
 * and commits), against the offline analyses of the same file:
 *
 * <ul>
 *   <li>each pass the topology closes, with its layers, renders to exactly the JSON pass `analyze layers` prints (the
 *       dashboard's REST pass is the same rendering), and each rank has the same passes;
 *   <li>the host processor's step windows, summed per rank and phase, are `analyze host`'s step counts and raw sums
 *       (Kineto traces and Nsight SQLite exports);
 *   <li>the cross-rank view of the one two-rank job is the {@code cross_rank} array of `analyze layers`.
 * </ul>
 *
 * The agent ships in exact order by default (every lane sorted, the lanes interleaved by time), as the offline
 * analyses read a file they find out of order. Three files have host events further out of order than the default
 * reorder window: with {@code --no-exact-order} the agent sends those late, counts them and says so in an anomaly
 * record (their kernels' categories, and in one M5, would then differ); by default nothing is late and the live
 * results are the offline ones there too.
 */
class RealTracesLiveParityTest {
    @TempDir
    Path tmp;

    @ParameterizedTest(name = "{0}: {2} passes, {3} layers, {4} sent late")
    @CsvSource(
            nullValues = "-",
            value = {
                "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz, model-configs/Qwen--Qwen3-8B_config.json, 1, 36, 0",
                "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz, model-configs/Qwen--Qwen3-8B_config.json, 1, 36, 0",
                "tracelens/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz, -, 0, 0, 0",
                "tracelens/inference/vllm_decode_full/graph_execution.json.gz, -, 1, 24, 0",
                "tracelens/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz, -, 0, 0, 3126",
                "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz, -, 1, 24, 0",
                "tracelens/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz, -, 1, 24, 3180",
                "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz, -, 1, 24, 0",
                "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz, -, 1, 24, 0",
                "tracelens/mi210/gpu_only_trace/gpu_only_trace.json.gz, -, 30, 59, 0",
                "nano-vllm/forward_50.json, -, 0, 0, 0",
                "nano-vllm/profile_results/decode_gpu_0.json, -, 0, 0, 0",
                "nano-vllm/profile_results/decode_gpu_100.json, -, 0, 0, 0",
                "nano-vllm/store_kvcache.json, -, 0, 0, 0",
                "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz, -, 1, 0, 0",
                "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz, -, 0, 0, 0",
                "hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz, -, 0, 0, 0",
                "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz, -, 0, 0, 0",
                "hta/df_index_resolver/df_index_resolver.json.gz, -, 5, 0, 2965",
                "hta/mtia_inference_trace/mtia_inference_rank_0.json.gz, -, 0, 0, 0",
                "hta/mtia_trace_single_rank/mtia_rank_0.json.gz, -, 0, 0, 0",
                "hta/nccl_parser_config/nccl_data.json.gz, -, 3, 0, 0",
                "hta/negative_queue_length_values_check/rank0.json.gz, -, 5, 0, 0",
                "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz, -, 5, 0, 0",
                "hta/trace_diff/control/control.json.gz, -, 6, 0, 0",
                "hta/trace_diff/test/test.json.gz, -, 6, 0, 0",
                "hta/trace_filter/sampled_rank-0.json.gz, -, 2, 0, 0",
                "hta/trace_filter/sampled_rank-1.json.gz, -, 2, 0, 0",
                "hta/triton_example/triton_example.json.gz, -, 0, 0, 0",
            })
    void theTopologyClosesTheSamePassesAndLayersAsAnalyzeLayers(
            String trace, String model, int passes, int layers, long late) throws IOException {
        Path file = SharedData.file(trace);
        Path config = model == null ? null : SharedData.file(model);
        JsonNode offline = analyze("layers", file, config);
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
        assertSame(
                offline, passViews(shippedInOrder(file, config, TraceBatcher.DEFAULT_BATCH_EVENTS, late, "default")));
        // Small batches: the host lane's events reach the segmenter in other slices against the GPU lane's, and
        // every step spans many records.
        assertSame(offline, passViews(shippedInOrder(file, config, 61, late, "small")));
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

    /**
     * The one multi-rank job here (HTA's trace_filter: ranks 0 and 1, two ProfilerSteps each), both files shipped
     * into one topology: the cross-rank view of each aligned step, as the dashboard renders it (its latest update),
     * is the {@code cross_rank} array of `analyze layers` of the directory.
     */
    @Test
    void theCrossRankViewOfTwoRanksIsAnalyzeLayersOne() throws IOException {
        Path dir = SharedData.file("hta/trace_filter/sampled_rank-0.json.gz").getParent();
        JsonNode offline = analyze("layers", dir, null);
        assertThat(offline.get("cross_rank")).hasSize(2);

        Outputs live = topology(
                List.of(dir.resolve("sampled_rank-0.json.gz"), dir.resolve("sampled_rank-1.json.gz")),
                null,
                TraceBatcher.DEFAULT_BATCH_EVENTS,
                ReaderOptions.shipping(),
                "cross-rank");
        Map<Long, CrossRankPass> latest = new TreeMap<>();
        live.crossRank().forEach(p -> latest.put(p.index(), p));
        List<JsonNode> views = latest.values().stream()
                .map(p -> Harness.reparse(CrossRankView.of(p)))
                .toList();
        List<JsonNode> expected = new ArrayList<>();
        offline.get("cross_rank").forEach(expected::add);
        assertThat(views).isEqualTo(expected);
    }

    /**
     * Host overhead the same way: every step window the topology's host processor emits, summed per rank and phase,
     * against `analyze host --format json` of the same file (its step counts and raw sums per phase, from which
     * every ratio and verdict is derived). The Nsight SQLite exports of ../shared/data go through the agent's SQLite
     * reader into the same topology.
     */
    @ParameterizedTest(name = "{0}: {1} steps, {2} sent late")
    @CsvSource({
        "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz, 1, 0",
        "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz, 1, 0",
        "tracelens/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz, 1, 0",
        "tracelens/inference/vllm_decode_full/graph_execution.json.gz, 1, 0",
        "tracelens/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz, 1, 3126",
        "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz, 1, 0",
        "tracelens/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz, 1, 3180",
        "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz, 1, 0",
        "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz, 1, 0",
        "tracelens/mi210/gpu_only_trace/gpu_only_trace.json.gz, 30, 0",
        "nano-vllm/forward_50.json, 1, 0",
        "nano-vllm/profile_results/decode_gpu_0.json, 1, 0",
        "nano-vllm/profile_results/decode_gpu_100.json, 1, 0",
        "nano-vllm/store_kvcache.json, 1, 0",
        "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz, 2, 0",
        "hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz, 1, 0",
        "hta/df_index_resolver/df_index_resolver.json.gz, 5, 2965",
        "hta/nccl_parser_config/nccl_data.json.gz, 3, 0",
        "hta/negative_queue_length_values_check/rank0.json.gz, 5, 0",
        "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz, 5, 0",
        "hta/trace_diff/control/control.json.gz, 6, 0",
        "hta/trace_diff/test/test.json.gz, 6, 0",
        "hta/trace_filter/sampled_rank-0.json.gz, 2, 0",
        "hta/trace_filter/sampled_rank-1.json.gz, 2, 0",
        "hta/triton_example/triton_example.json.gz, 1, 0",
        "extrap-nsight/nsys_db/con_kernel.sqlite, 1, 0",
        "extrap-nsight/concurrent_example/concurrent.s16/profile16.sqlite, 1, 0",
        "extrap-nsight/sampled_callchains/ex-gpu.s1000/ex-gpu.s1000.sqlite, 1, 0",
        "nvfuser/report1.sqlite, 1, 0",
        "memfusion-artifact/report1.sqlite, 1, 0",
    })
    void theHostProcessorSumsTheSameStepWindowsAsAnalyzeHost(String trace, int steps, long late) throws IOException {
        Path file = SharedData.file(trace);
        JsonNode offline = analyze("host", file, null);
        Map<String, Map<String, HostSums>> expected = new TreeMap<>();
        int offlineSteps = 0;
        for (JsonNode rank : offline.path("ranks")) {
            offlineSteps += rank.get("steps").asInt();
            Map<String, HostSums> phases = new TreeMap<>();
            for (String phase : List.of("all", "context", "generation")) {
                JsonNode sums = rank.path(phase).path("sums");
                if (sums.path("steps").asLong() > 0) {
                    phases.put(phase, sums(sums));
                }
            }
            expected.put(rank.get("rank").asText(), phases);
        }
        assertThat(offlineSteps).as("offline steps").isEqualTo(steps);

        Map<String, Map<String, HostSums>> live = new TreeMap<>();
        for (HostStep step : shippedInOrder(file, null, TraceBatcher.DEFAULT_BATCH_EVENTS, late, "host")
                .hostSteps()) {
            Map<String, HostSums> phases = live.computeIfAbsent(step.rank(), k -> new TreeMap<>());
            phases.merge("all", step.sums(), HostSums::plus);
            if (step.phase() != null) {
                phases.merge(step.phase(), step.sums(), HostSums::plus);
            }
        }
        assertThat(live).isEqualTo(expected);
    }

    private static HostSums sums(JsonNode s) {
        return new HostSums(
                s.get("steps").asLong(),
                s.get("window_ns").asLong(),
                s.get("busy_ns").asLong(),
                s.get("launch_ns").asLong(),
                s.get("launch_calls").asLong(),
                s.get("api_calls").asLong(),
                s.get("host_prep_ns").asLong(),
                s.get("host_prep_exposed_ns").asLong(),
                s.get("comm_ns").asLong(),
                s.get("kernels").asLong(),
                s.get("graph_kernels").asLong(),
                s.get("memops").asLong());
    }

    /** `analyze WHAT --format json` of the file, in this JVM. */
    private static JsonNode analyze(String what, Path file, Path config) throws IOException {
        List<String> args = new ArrayList<>(List.of(what, "--trace", file.toString(), "--format", "json"));
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
        assertThat(exit).as("analyze %s exit; stderr: %s", what, err).isZero();
        return Json.mapper().readTree(out.toString());
    }

    /** What the topology wrote for the file as the agent ships it. */
    private record Outputs(
            List<PassRecord> passes,
            List<LayerRecord> layers,
            List<HostStep> hostSteps,
            List<CrossRankPass> crossRank,
            long sentLate,
            long anomalies) {}

    private Outputs topology(Path file, Path config, int batchEvents, ReaderOptions read, String stateDir)
            throws IOException {
        return topology(List.of(file), config, batchEvents, read, stateDir);
    }

    /** The files shipped one after the other, each named (job, run) from its path as the agent names it. */
    private Outputs topology(List<Path> files, Path config, int batchEvents, ReaderOptions read, String stateDir)
            throws IOException {
        AgentMeters agentMeters = new AgentMeters(new SimpleMeterRegistry());
        MockProducer<byte[], byte[]> kafka =
                new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
        long sentLate = 0;
        for (Path file : files) {
            TraceShipper.Result shipped = new TraceShipper(
                            new TraceProducer(kafka, agentMeters),
                            agentMeters,
                            read,
                            batchEvents,
                            TraceBatcher.DEFAULT_MAX_BATCH_BYTES)
                    .ship(file, TraceFiles.jobName(file), TraceFiles.runName(file), TraceShipper.ShipOptions.fresh());
            sentLate += shipped.summary().outOfOrder();
        }
        long anomalies = kafka.history().stream()
                .filter(r -> r.topic().equals(Topics.ANOMALIES.name()))
                .count();

        StreamsAppConfig app = StreamsAppConfig.builder("unused:9092")
                .stateDir(tmp.resolve(stateDir))
                .modelConfig(config)
                .build();
        StreamsMeters meters = new StreamsMeters(new SimpleMeterRegistry());
        Instant start = Instant.parse("2026-01-01T00:00:00Z");
        try (TopologyTestDriver driver = new TopologyTestDriver(
                TopologyFactory.build(app, meters), TopologyFactory.streamsProperties(app, meters), start)) {
            TestInputTopic<byte[], byte[]> in = driver.createInputTopic(
                    Topics.TRACE_EVENTS.name(), new ByteArraySerializer(), new ByteArraySerializer());
            long ts = start.toEpochMilli();
            for (ProducerRecord<byte[], byte[]> r : kafka.history()) {
                if (r.topic().equals(Topics.TRACE_EVENTS.name())) {
                    in.pipeInput(r.key(), r.value(), ts++);
                }
            }
            driver.advanceWallClockTime(Duration.ofMinutes(10)); // idle punctuations: they must change nothing
            return new Outputs(
                    values(driver.createOutputTopic(
                            Topics.PASSES.name(),
                            new StringDeserializer(),
                            Topics.PASSES.valueSerde().deserializer())),
                    values(driver.createOutputTopic(
                            Topics.LAYERS.name(),
                            new StringDeserializer(),
                            Topics.LAYERS.valueSerde().deserializer())),
                    values(driver.createOutputTopic(
                            Topics.HOST_STEPS.name(),
                            new StringDeserializer(),
                            Topics.HOST_STEPS.valueSerde().deserializer())),
                    values(driver.createOutputTopic(
                            Topics.CROSS_RANK.name(),
                            new StringDeserializer(),
                            Topics.CROSS_RANK.valueSerde().deserializer())),
                    sentLate,
                    anomalies);
        }
    }

    private static <V> List<V> values(TestOutputTopic<String, V> topic) {
        return topic.readRecordsToList().stream().map(TestRecord::value).toList();
    }

    /**
     * The topology's outputs from the agent's default shipping (exact order), which sends no event late; and, with
     * {@code --no-exact-order} and the default window, the agent sends {@code late} events late and reports them in an
     * anomaly record when it does (where the merge of the lanes then lets a kernel out before its launch, a result may
     * change: the reason for the default).
     */
    private Outputs shippedInOrder(Path file, Path config, int batchEvents, long late, String stateDir)
            throws IOException {
        Outputs exact = topology(file, config, batchEvents, ReaderOptions.shipping(), stateDir);
        assertThat(exact.sentLate()).as("events sent late in exact order").isZero();
        ReaderOptions asRead = ReaderOptions.shipping().withExactOrder(false);
        if (late == 0) {
            // the reader alone: what the shipper would send late
            assertThat(TraceReaders.read(file, asRead, new OrderedSink() {
                                @Override
                                public void event(String rank, Lane lane, long index, TraceEvent event) {}

                                @Override
                                public void endOfTrace(String rank, Lane lane) {}
                            })
                            .outOfOrder())
                    .as("events sent late with --no-exact-order and the default reorder window")
                    .isZero();
            return exact;
        }
        Outputs shippedAsRead = topology(file, config, batchEvents, asRead, stateDir + "-as-read");
        assertThat(shippedAsRead.sentLate())
                .as("events sent late with --no-exact-order and the default reorder window")
                .isEqualTo(late);
        assertThat(shippedAsRead.anomalies() - exact.anomalies())
                .as("one more anomaly record, saying so")
                .isEqualTo(1);
        return exact;
    }

    /** Per rank, the passes the topology closed (in order), each rendered with its layers as the REST API does. */
    private static Map<String, List<JsonNode>> passViews(Outputs out) {
        Map<String, PassRecord> passes = new TreeMap<>();
        Map<String, List<LayerRecord>> layers = new TreeMap<>();
        for (PassRecord p : out.passes()) {
            passes.put(p.rank() + "\u0000" + String.format("%012d", p.index()), p);
        }
        for (LayerRecord l : out.layers()) {
            layers.computeIfAbsent(l.rank() + "\u0000" + String.format("%012d", l.passIndex()), k -> new ArrayList<>())
                    .add(l);
        }
        Map<String, List<JsonNode>> byRank = new TreeMap<>();
        for (Map.Entry<String, PassRecord> e : passes.entrySet()) {
            List<LayerRecord> mine = new ArrayList<>(layers.getOrDefault(e.getKey(), List.of()));
            mine.sort(Comparator.comparingInt(LayerRecord::layer));
            byRank.computeIfAbsent(e.getValue().rank(), k -> new ArrayList<>())
                    .add(Harness.reparse(PassView.of(e.getValue(), mine)));
        }
        return byRank;
    }
}
