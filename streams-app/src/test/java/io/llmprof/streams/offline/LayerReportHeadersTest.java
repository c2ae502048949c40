package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.LayerTruth;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Json;
import io.llmprof.streams.support.SharedData;
import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `analyze layers` on a two-rank DeepSeek-V4-Flash synth job: every rank's hardware (the synth writer's
 * deviceProperties and distributedInfo), its cluster statistics in JSON and its one-line summary, each checked
 * against the synth truth or recomputed from the per-layer figures of the same document.
 */
class LayerReportHeadersTest {
    static final Path V4 = SharedData.file("model-configs/deepseek-ai--DeepSeek-V4-Flash_config.json");
    static final int LAYERS = 6;

    @TempDir
    static Path tmp;

    static SynthResult synth;
    static JsonNode doc;
    static String text;

    @BeforeAll
    static void analyze() throws Exception {
        synth = SynthTrace.write(
                SynthSpec.builder(V4)
                        .passes(8)
                        .ranks(2)
                        .layers(LAYERS)
                        .stepMarkers(false)
                        .build(),
                tmp.resolve("job"));
        List<String> args = new ArrayList<>(List.of("layers"));
        synth.ranks().forEach(r -> {
            args.add("--trace");
            args.add(r.file().toString());
        });
        args.addAll(List.of("--config", V4.toString(), "--num-layers", "" + LAYERS));
        List<String> json = new ArrayList<>(args);
        json.addAll(List.of("--format", "json"));
        AnalyzeLayersCommandTest.Out o = AnalyzeLayersCommandTest.analyze(json.toArray(String[]::new));
        assertThat(o.code()).as(o.err()).isZero();
        doc = Json.mapper().readTree(o.out());
        AnalyzeLayersCommandTest.Out t = AnalyzeLayersCommandTest.analyze(args.toArray(String[]::new));
        assertThat(t.code()).as(t.err()).isZero();
        text = t.out();
    }

    @Test
    void everyRankSaysItsGpuAndWorldSizeAndThatTpIsNotNamed() {
        // KinetoWriter: device = rank, deviceProperties = min(8, ranks) x "NVIDIA H100 80GB HBM3" (132 SMs,
        // 85024112640 bytes, 9.0), distributedInfo = nccl, rank, world_size = ranks, one default_pg group.
        for (int r = 0; r < 2; r++) {
            JsonNode h = doc.at("/ranks/" + r + "/hardware");
            assertThat(h.get("device").asInt()).isEqualTo(r);
            assertThat(h.get("gpu").asText()).isEqualTo("NVIDIA H100 80GB HBM3");
            assertThat(h.get("gpu_note").isNull()).isTrue();
            assertThat(h.get("sms").asInt()).isEqualTo(132);
            assertThat(h.get("memory_bytes").asLong()).isEqualTo(85024112640L);
            assertThat(h.get("compute_capability").asText()).isEqualTo("9.0");
            assertThat(h.get("devices_listed").asInt()).isEqualTo(2);
            assertThat(h.get("backend").asText()).isEqualTo("nccl");
            assertThat(h.get("trace_rank").asText()).isEqualTo("" + r);
            assertThat(h.get("world_size").asInt()).isEqualTo(2);
            assertThat(h.get("tp").isNull()).as("default_pg names no TP group").isTrue();
            assertThat(h.get("tp_source").asText()).startsWith("not stated: no process group is named for TP");
            assertThat(h.get("ep").isNull()).isTrue();
            assertThat(h.at("/process_groups/0/desc").asText()).isEqualTo("default_pg");
            assertThat(h.at("/process_groups/0/size").asInt()).isEqualTo(2);
            assertThat(text)
                    .contains("rank " + r + ": GPU NVIDIA H100 80GB HBM3 (device " + r + " of 2 listed; 132 SMs, 79.2"
                            + " GiB, compute 9.0); nccl, rank " + r + " of world size 2; TP ? (not stated");
        }
    }

    @Test
    void clustersInJsonAreThoseOfTheChosenPassAndOfEverySteadyPass() {
        for (JsonNode rank : doc.get("ranks")) {
            JsonNode passes = rank.get("passes");
            JsonNode chosen = null;
            int steady = 0;
            for (JsonNode p : passes) {
                if (p.get("steady").asBoolean()) {
                    steady++;
                    if (chosen == null) {
                        chosen = p;
                    }
                }
            }
            assertThat(chosen).as("8 equal synth passes: passes 3.. are steady").isNotNull();
            JsonNode clusters = rank.get("clusters");
            assertThat(clusters.get("pass").asLong())
                    .isEqualTo(chosen.get("index").asLong());
            assertThat(clusters.get("choice").asText()).isEqualTo("first steady pass");
            // recomputed from the chosen pass's layers: count and mean SumDur (integer ns) per type, in order of
            // the lowest layer index
            Map<String, List<Long>> sums = new LinkedHashMap<>();
            for (JsonNode l : chosen.get("layers")) {
                sums.computeIfAbsent(l.get("type").asText(), k -> new ArrayList<>())
                        .add(l.get("sum_us").decimalValue().movePointRight(3).longValueExact());
            }
            JsonNode rows = clusters.get("pass_clusters");
            assertThat(rows).extracting(r -> r.get("cluster").asText()).containsExactlyElementsOf(sums.keySet());
            assertThat(new TreeSet<>(sums.keySet()))
                    .as("every layer type of the synth truth has its row")
                    .isEqualTo(new TreeSet<>(synth.ranks().get(0).layerTruths().stream()
                            .map(LayerTruth::type)
                            .toList()));
            for (JsonNode row : rows) {
                List<Long> s = sums.get(row.get("cluster").asText());
                assertThat(row.get("count").asInt()).isEqualTo(s.size());
                long mean = s.stream().mapToLong(Long::longValue).sum() / s.size();
                assertThat(row.get("avg_sum_us").decimalValue()).isEqualByComparingTo(BigDecimal.valueOf(mean, 3));
            }
            JsonNode steadyRows = clusters.get("steady");
            assertThat(steadyRows).hasSize(1);
            assertThat(steadyRows.at("/0/phase").asText()).isEqualTo("all");
            assertThat(steadyRows.at("/0/passes").asInt()).isEqualTo(steady);
            for (JsonNode row : steadyRows.at("/0/clusters")) {
                assertThat(row.get("count").asInt())
                        .isEqualTo(
                                steady * sums.get(row.get("cluster").asText()).size());
            }
        }
    }

    @Test
    void theSummaryNamesTheHeaviestLayerTypeAndItsTopCategory() {
        for (JsonNode rank : doc.get("ranks")) {
            JsonNode summary = rank.get("summary");
            long index = rank.at("/clusters/pass").asLong();
            JsonNode chosen = rank.get("passes").get((int) index);
            Map<String, Long> byType = new LinkedHashMap<>();
            Map<String, Long> byCategory = new TreeMap<>();
            for (JsonNode l : chosen.get("layers")) {
                byType.merge(l.get("type").asText(), ns(l.get("sum_us")), Long::sum);
                l.get("categories")
                        .fields()
                        .forEachRemaining(e -> byCategory.merge(e.getKey(), ns(e.getValue()), Long::sum));
            }
            String type = argmax(byType);
            long passSum = ns(chosen.get("sum_us"));
            assertThat(summary.get("pass").asLong()).isEqualTo(index);
            assertThat(summary.get("layer_type").asText()).isEqualTo(type);
            assertThat(summary.get("layer_type_pct").decimalValue())
                    .isEqualByComparingTo(BigDecimal.valueOf(byType.get(type) * 100)
                            .divide(BigDecimal.valueOf(passSum), 2, java.math.RoundingMode.HALF_UP));
            assertThat(summary.get("category").asText()).isEqualTo(argmax(byCategory));
            int target = summary.get("target_layer").asInt();
            assertThat(chosen.at("/layers/" + target + "/type").asText()).isEqualTo(type);
            assertThat(text).contains(summary.get("text").asText());
        }
    }

    @Test
    void realTracesSayTheirGpuAndRocmDeviceIdsFindTheListedModel() {
        // Read by hand (python3, json.load): nccl_data's kernels run on device 0; deviceProperties lists 8 x
        // "NVIDIA A100-PG509-200" (numSms 108, totalGlobalMem 42297524224, 8.0); distributedInfo nccl, rank 0,
        // world_size 2, one default_pg of size 2.
        String a100 = AnalyzeLayersCommandTest.analyze(
                        "layers",
                        "--trace",
                        SharedData.file("hta/nccl_parser_config/nccl_data.json.gz")
                                .toString())
                .out();
        assertThat(a100)
                .contains(
                        "rank 0: GPU NVIDIA A100-PG509-200 (device 0 of 8 listed; 108 SMs, 39.4 GiB, compute 8.0); nccl,"
                                + " rank 0 of world size 2; TP ? (not stated: no process group is named for TP (world size 2,"
                                + " 1 group(s), pg_desc [default_pg])), EP ? (not stated");
        // The SGLang MI300X decode: kernels on device 9 (ROCm counts the host's CPU agents), deviceProperties id 0
        // "AMD Instinct MI300X" (304 CUs, 206141652992 bytes, 9.4); world size 1.
        String mi300 = AnalyzeLayersCommandTest.analyze("layers", "--trace", AnalyzeLayersCommandTest.SGLANG.toString())
                .out();
        assertThat(mi300)
                .contains(
                        "rank 0: GPU AMD Instinct MI300X (device 9 of 1 listed; 304 SMs, 192.0 GiB, compute 9.4; device 9"
                                + " is not among the deviceProperties ids [0] (ROCm counts CPU agents in device ids); every"
                                + " listed GPU is this model); nccl, rank 0 of world size 1; TP 1 (world size 1), EP 1 (world"
                                + " size 1)");
    }

    @Test
    void perfettoRangesHaveSecondsBesideMicrosecondsAndLayersTheirCompressRatio() throws Exception {
        Path trace = synth.ranks().get(0).file();
        AnalyzeLayersCommandTest.Out o = AnalyzeLayersCommandTest.analyze(
                "perfetto",
                "--trace",
                trace.toString(),
                "--config",
                V4.toString(),
                "--num-layers",
                "" + LAYERS,
                "--fwd-pass",
                "3",
                "--format",
                "json");
        JsonNode p = AnalyzeKernelsCommandTest.json(o); // exact decimals
        assertThat(p.at("/hardware/gpu").asText()).isEqualTo("NVIDIA H100 80GB HBM3");
        JsonNode layers = p.at("/passes/0/layers");
        assertThat(layers).hasSize(LAYERS);
        for (LayerTruth lt : synth.ranks().get(0).layerTruths()) {
            JsonNode l = layers.get(lt.index());
            // the config's compress_ratios[L] (the synth truth), in the field and the label
            assertThat(l.get("compress_ratio").asInt()).isEqualTo(lt.compressRatio());
            assertThat(l.at("/range/label").asText())
                    .isEqualTo("pass 3 layer " + lt.index() + " c_r=" + lt.compressRatio());
            // seconds = the same offset as the µs, exact to the ns
            assertThat(l.at("/range/start_s").decimalValue())
                    .isEqualByComparingTo(l.at("/range/start_us").decimalValue().movePointLeft(6));
            assertThat(l.at("/range/end_s").decimalValue())
                    .isEqualByComparingTo(l.at("/range/end_us").decimalValue().movePointLeft(6));
        }
        String text = AnalyzeLayersCommandTest.analyze(
                        "perfetto",
                        "--trace",
                        trace.toString(),
                        "--config",
                        V4.toString(),
                        "--num-layers",
                        "" + LAYERS,
                        "--fwd-pass",
                        "3")
                .out();
        JsonNode l3 = layers.get(3);
        assertThat(text)
                .contains("  layer 3 " + l3.get("type").asText() + " c_r="
                        + l3.get("compress_ratio").asInt())
                .contains(
                        " us (" + seconds6(l3.at("/range/start_s")) + " .. " + seconds6(l3.at("/range/end_s")) + " s)");
    }

    static String seconds6(JsonNode s) {
        return s.decimalValue().setScale(6, java.math.RoundingMode.HALF_UP).toPlainString();
    }

    static long ns(JsonNode us) {
        return us.decimalValue().movePointRight(3).longValueExact();
    }

    static String argmax(Map<String, Long> m) {
        return m.entrySet().stream()
                .reduce((a, b) -> b.getValue() > a.getValue() ? b : a)
                .orElseThrow()
                .getKey();
    }
}
