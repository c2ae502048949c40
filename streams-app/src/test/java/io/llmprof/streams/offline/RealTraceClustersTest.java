package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import io.llmprof.streams.support.SharedData;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * Layer types, cluster tables and the per-layer columns on the real traces of ../shared/data/tracelens.
 *
 * <p>Middle-layer K#, AR# and SumDur were counted by hand with a short python script over the JSON: kernels
 * (ph X, cat kernel) sorted by ts, names made canonical (strip "void ", the trailing argument list), the
 * detected anchor's occurrences located (36 on the sglang Qwen3-8B traces, 24 on the vLLM ones), layer L =
 * kernels from occurrence L to occurrence L+1; AR# = names matching the all-reduce pattern (none: these are
 * single-GPU runs); SumDur = sum of dur. A middle layer does not depend on where the pass is cut.
 */
class RealTraceClustersTest {
    static final Pattern CLUSTER_ROW = Pattern.compile(
            "^(\\S+)\\s+(\\d+)\\s+(\\d+\\.\\d{3})\\s+(\\d+\\.\\d{3})((?:\\s+\\d+\\.\\d)+)$", Pattern.MULTILINE);

    static String analyze(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = AnalyzeCommand.commandLine();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        assertThat(cli.execute(args)).as(err.toString()).isZero();
        return out.toString();
    }

    static List<String> args(String trace, String config, String... more) {
        List<String> a = new ArrayList<>(List.of(
                "layers", "--trace", SharedData.file("tracelens/" + trace).toString()));
        if (config != null && !config.isBlank()) {
            a.add("--config");
            a.add(SharedData.file("model-configs/" + config).toString());
        }
        a.addAll(List.of(more));
        return a;
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz, Qwen--Qwen3-8B_config.json, 36, 18, 15, 0, 251.561",
        "inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz, Qwen--Qwen3-8B_config.json, 36, 18, 14,"
                + " 0, 13606.275",
        "inference/vllm_decode_full/graph_execution.json.gz, , 24, 12, 17, 0, 343.781",
        "inference/vllm_prefilldecode_piecewise/graph_execution.json.gz, , 24, 12, 17, 0, 6411.666",
    })
    void clustersAreFirstLayerFinalAndAMiddleLayerIsWhatWeCountByHand(
            String trace, String config, int layers, int middle, int kernels, int allreduces, String sumUs)
            throws Exception {
        JsonNode doc = Json.mapper()
                .copy()
                .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                .readTree(analyze(args(trace, config, "--format", "json").toArray(String[]::new)));
        assertThat(doc.get("num_layers").asInt()).isEqualTo(layers);
        JsonNode full = null;
        for (JsonNode p : doc.at("/ranks/0/passes")) {
            if (p.get("layers").size() == layers) {
                full = p;
                break;
            }
        }
        assertThat(full).as("a pass with all %d layers", layers).isNotNull();
        JsonNode layer = full.get("layers").get(middle);
        assertThat(layer.get("type").asText()).isEqualTo("LAYER");
        assertThat(layer.get("kernels").asInt()).isEqualTo(kernels);
        assertThat(layer.get("allreduce_count").asInt()).isEqualTo(allreduces);
        assertThat(layer.get("sum_us").decimalValue()).isEqualByComparingTo(sumUs);
        assertThat(layer.get("compress_ratio").isNull()).isTrue();

        String text = analyze(args(trace, config).toArray(String[]::new));
        int at = text.indexOf("Clusters of pass");
        assertThat(at).as(text).isPositive();
        String table = text.substring(at, text.indexOf("Clusters over steady passes", at));
        Matcher m = CLUSTER_ROW.matcher(table);
        List<String> clusters = new ArrayList<>();
        List<Integer> counts = new ArrayList<>();
        while (m.find()) {
            clusters.add(m.group(1));
            counts.add(Integer.parseInt(m.group(2)));
            double shares = 0;
            for (String v : m.group(5).trim().split("\\s+")) {
                shares += Double.parseDouble(v);
            }
            assertThat(shares).as("named shares of %s", m.group(1)).isBetween(0.0, 100.0 + 0.3);
        }
        assertThat(clusters).containsExactly("FIRST", "LAYER", "FINAL");
        assertThat(counts).containsExactly(1, layers - 2, 1);
        assertThat(text).contains("c_r", "SumDur(ms)", "double-counts");
    }
}
