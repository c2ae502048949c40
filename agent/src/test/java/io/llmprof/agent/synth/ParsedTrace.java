package io.llmprof.agent.synth;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;

/** A small trace read whole with Jackson (exact decimals), plus the anchor segmentation of ANALYSIS.md. */
final class ParsedTrace {
    record Kernel(String name, long startNs, long durNs, long correlation, int device, int stream, JsonNode event) {
        long endNs() {
            return startNs + durNs;
        }
    }

    final JsonNode root;
    final List<JsonNode> events = new ArrayList<>();
    final List<Kernel> kernels = new ArrayList<>();
    final Map<Long, JsonNode> launchesByCorrelation = new HashMap<>();
    final Map<Long, JsonNode> cpuOpsByExternalId = new HashMap<>();

    private ParsedTrace(JsonNode root) {
        this.root = root;
        root.path("traceEvents").forEach(events::add);
        for (JsonNode e : events) {
            String cat = e.path("cat").asText();
            switch (cat) {
                case "kernel" -> kernels.add(new Kernel(
                        e.path("name").asText(),
                        ns(e.get("ts")),
                        ns(e.get("dur")),
                        e.path("args").path("correlation").asLong(),
                        e.path("args").path("device").asInt(),
                        e.path("args").path("stream").asInt(),
                        e));
                case "cuda_runtime", "cuda_driver" -> launchesByCorrelation.put(
                        e.path("args").path("correlation").asLong(), e);
                case "cpu_op" -> cpuOpsByExternalId.put(
                        e.path("args").path("External id").asLong(), e);
                default -> {}
            }
        }
        kernels.sort(Comparator.comparingLong(Kernel::startNs));
    }

    static ParsedTrace read(Path file) throws IOException {
        try (InputStream raw = Files.newInputStream(file);
                InputStream in = file.toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw) {
            JsonNode root = Json.mapper()
                    .reader()
                    .with(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                    .readTree(in);
            return new ParsedTrace(root);
        }
    }

    static long ns(JsonNode micros) {
        return micros.decimalValue().movePointRight(3).longValueExact();
    }

    static BigDecimal decimal(JsonNode micros) {
        return micros.decimalValue();
    }

    List<JsonNode> byCat(String cat) {
        return events.stream().filter(e -> cat.equals(e.path("cat").asText())).toList();
    }

    List<JsonNode> byName(String name) {
        return events.stream().filter(e -> name.equals(e.path("name").asText())).toList();
    }

    /** Kernel indexes of the anchors, in start order. */
    List<Integer> anchors(String pattern) {
        List<Integer> at = new ArrayList<>();
        for (int i = 0; i < kernels.size(); i++) {
            if (kernels.get(i).name().contains(pattern)) {
                at.add(i);
            }
        }
        return at;
    }

    /**
     * ANALYSIS.md section 2, rule 2: B anchors per pass, the cut between passes at the largest idle gap between the
     * last anchor of one pass and the first anchor of the next. Returns the kernel index where each pass starts, plus
     * the end.
     */
    List<Integer> passCuts(String pattern, int anchorsPerPass) {
        List<Integer> anchors = anchors(pattern);
        long[] runningEnd = new long[kernels.size()];
        long max = Long.MIN_VALUE;
        for (int i = 0; i < kernels.size(); i++) {
            max = Math.max(max, kernels.get(i).endNs());
            runningEnd[i] = max;
        }
        List<Integer> cuts = new ArrayList<>();
        cuts.add(0);
        for (int p = 1; p * anchorsPerPass < anchors.size(); p++) {
            int last = anchors.get(p * anchorsPerPass - 1);
            int next = anchors.get(p * anchorsPerPass);
            long best = Long.MIN_VALUE;
            int cut = -1;
            for (int i = last; i < next; i++) {
                long gap = kernels.get(i + 1).startNs() - runningEnd[i];
                if (gap > best) {
                    best = gap;
                    cut = i + 1;
                }
            }
            cuts.add(cut);
        }
        cuts.add(kernels.size());
        return cuts;
    }

    /** Kernel count of every layer of one pass, by the anchor role (opens: [a_i, a_i+1); closes: (a_i-1, a_i]). */
    static List<Integer> layerKernelCounts(
            List<Kernel> pass, String pattern, boolean closes, int blocksPerLayer, int layers) {
        List<Integer> anchors = new ArrayList<>();
        for (int i = 0; i < pass.size(); i++) {
            if (pass.get(i).name().contains(pattern)) {
                anchors.add(i);
            }
        }
        List<Integer> counts = new ArrayList<>();
        for (int l = 0; l < layers; l++) {
            int first;
            int end;
            if (closes) {
                first = l == 0 ? 0 : anchors.get(l * blocksPerLayer - 1) + 1;
                end = anchors.get(l * blocksPerLayer + blocksPerLayer - 1) + 1;
            } else {
                first = anchors.get(l * blocksPerLayer);
                end = l == layers - 1 ? pass.size() : anchors.get((l + 1) * blocksPerLayer);
            }
            counts.add(end - first);
        }
        return counts;
    }
}
