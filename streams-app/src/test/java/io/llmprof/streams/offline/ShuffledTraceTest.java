package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.Json;
import io.llmprof.streams.support.SharedData;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Offline results do not depend on the order of events in the file (issue 17): a 601,470-event trace (synth, Qwen3-8B,
 * 410 passes) and the same events shuffled globally (valid Chrome-trace JSON; Perfetto and HTA sort) give the same
 * passes, layers and kernels (analyze layers, host and kernels). The shuffled file is far beyond the 65,536-event reorder window (about 277k events
 * arrive after a later one was emitted), so this is the external sort at work; before it, such a file lost passes.
 */
class ShuffledTraceTest {
    @TempDir
    Path tmp;

    @Test
    void aGloballyShuffledTraceGivesTheResultsOfTheSortedOne() throws Exception {
        // other processes on the box may hold (or have left) some: compare with what was there before
        java.util.Set<String> sortDirsBefore = sortDirs();
        Path config = SharedData.file("model-configs/Qwen--Qwen3-8B_config.json");
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config).passes(410).ranks(1).seed(5).build(), tmp.resolve("sorted"));
        Path sorted = synth.files().get(0);
        Path shuffled = tmp.resolve("shuffled/rank-0.pt.trace.json");
        long events = shuffle(sorted, shuffled, new Random(17));
        assertThat(events).as("trace entries").isGreaterThan(600_000);

        JsonNode a = layers(sorted, config);
        JsonNode b = layers(shuffled, config);
        assertThat(a.get("input").get("files").get(0).get("events").asLong()).isEqualTo(601_470);
        assertThat(b.get("input").get("files").get(0).get("events").asLong()).isEqualTo(601_470);
        assertThat(b.get("input").get("complete").asBoolean()).isTrue();
        assertThat(a.get("ranks").get(0).get("passes")).hasSize(410);
        assertThat(b.get("ranks")).isEqualTo(a.get("ranks"));
        assertThat(b.get("cross_rank")).isEqualTo(a.get("cross_rank"));

        // analyze host and analyze kernels read the same way: the same steps, verdicts and layer kernels
        JsonNode hostA = AnalyzeHostCommandTest.analyze(List.of(sorted), "--config", config.toString());
        JsonNode hostB = AnalyzeHostCommandTest.analyze(List.of(shuffled), "--config", config.toString());
        for (String field : List.of("verdict", "llmprof_verdict", "sums", "steps", "aggregate_metrics", "ranks")) {
            assertThat(hostB.get(field)).as(field).isEqualTo(hostA.get(field));
        }
        assertThat(hostB.get("notices").toString()).contains("sorted on disk");
        JsonNode kernelsA = kernels(sorted, config);
        JsonNode kernelsB = kernels(shuffled, config);
        assertThat(kernelsB.get("layer")).isEqualTo(kernelsA.get("layer"));
        assertThat(kernelsB.get("kernels")).isEqualTo(kernelsA.get("kernels"));
        assertThat(sortDirs()).as("the sorted readings' directories deleted").isEqualTo(sortDirsBefore);
    }

    private static java.util.Set<String> sortDirs() throws IOException {
        try (Stream<Path> all = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return all.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("llmprof-sort-"))
                    .collect(java.util.stream.Collectors.toSet());
        }
    }

    private static JsonNode kernels(Path trace, Path config) throws IOException {
        AnalyzeLayersCommandTest.Out o = AnalyzeLayersCommandTest.analyze(
                "kernels",
                "--trace",
                trace.toString(),
                "--config",
                config.toString(),
                "--layer",
                "3",
                "--format",
                "json");
        assertThat(o.code()).as(o.err()).isZero();
        return Json.mapper().readTree(o.out());
    }

    private static JsonNode layers(Path trace, Path config) throws IOException {
        AnalyzeLayersCommandTest.Out o = AnalyzeLayersCommandTest.analyze(
                "layers", "--trace", trace.toString(), "--config", config.toString(), "--format", "json");
        assertThat(o.code()).as(o.err()).isZero();
        return Json.mapper().readTree(o.out());
    }

    /**
     * Shuffles the trace's events in bounded memory, keeping each event's text as it is: synth writes one event per
     * block of lines from "  {" to "  }" / "  },"; blocks go to 64 random buckets on disk, each bucket is then
     * shuffled in memory and written out. Returns the number of events.
     */
    static long shuffle(Path in, Path out, Random random) throws IOException {
        Files.createDirectories(out.getParent());
        int buckets = 64;
        List<BufferedWriter> parts = new ArrayList<>();
        Path partsDir = Files.createDirectories(out.getParent().resolve("parts"));
        for (int i = 0; i < buckets; i++) {
            parts.add(Files.newBufferedWriter(partsDir.resolve("b" + i), StandardCharsets.UTF_8));
        }
        StringBuilder head = new StringBuilder();
        StringBuilder tail = new StringBuilder();
        long events = 0;
        try (BufferedReader r = Files.newBufferedReader(in, StandardCharsets.UTF_8)) {
            String line;
            boolean inEvents = false;
            boolean after = false;
            StringBuilder block = null;
            while ((line = r.readLine()) != null) {
                if (after) {
                    tail.append(line).append('\n');
                } else if (!inEvents) {
                    head.append(line).append('\n');
                    inEvents = line.trim().equals("\"traceEvents\": [");
                } else if (block == null && line.equals("  ],")) {
                    after = true;
                    tail.append(line).append('\n');
                } else if (block == null) {
                    assertThat(line).as("an event starts").isEqualTo("  {");
                    block = new StringBuilder();
                } else if (line.equals("  },") || line.equals("  }")) {
                    // one event per line of the bucket: its lines joined (JSON needs no newlines)
                    parts.get(random.nextInt(buckets)).append(block).append('\n');
                    events++;
                    block = null;
                } else {
                    block.append(line).append(' ');
                }
            }
        }
        for (BufferedWriter w : parts) {
            w.close();
        }
        try (BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
            w.append(head);
            boolean first = true;
            for (int i = 0; i < buckets; i++) {
                List<String> lines = new ArrayList<>(Files.readAllLines(partsDir.resolve("b" + i)));
                Collections.shuffle(lines, random);
                for (String e : lines) {
                    w.append(first ? "  {" : ",\n  {").append(e).append('}');
                    first = false;
                }
                Files.delete(partsDir.resolve("b" + i));
            }
            w.append('\n').append(tail);
        }
        return events;
    }
}
