package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A bounded fuzz of the trace reader with truncated, bit-flipped and spliced versions of real traces (plain and
 * gzip): the reader never throws for bad content (it reports problems and says whether it read to the end), keeps
 * its sink contract (indexes 0, 1, 2, ... per rank and lane, nothing after a lane's end), and its memory does not
 * follow the file's size. Seeded: the same mutants every run.
 */
class ReaderFuzzTest {
    private static final String[] TRACES = {
        "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "hta/trace_filter/sampled_rank-0.json.gz",
        "nano-vllm/profile_results/decode_gpu_0.json",
        "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
    };
    private static final int MUTANTS_PER_TRACE = 24;

    @TempDir
    Path dir;

    /** A sink that checks the contract and counts, without keeping events. */
    static final class ContractSink implements OrderedSink {
        final Map<String, Long> next = new HashMap<>();
        final Set<String> ended = new HashSet<>();
        long events;
        long problems;

        @Override
        public void event(String rank, Lane lane, long index, TraceEvent event) {
            String key = rank + "/" + lane;
            assertThat(ended).as("event after the end of %s", key).doesNotContain(key);
            assertThat(index).as("index of %s", key).isEqualTo(next.getOrDefault(key, 0L));
            assertThat(event.durNs()).isNotNegative();
            next.put(key, index + 1);
            events++;
        }

        @Override
        public void endOfTrace(String rank, Lane lane) {
            assertThat(ended.add(rank + "/" + lane))
                    .as("second end of %s/%s", rank, lane)
                    .isTrue();
        }

        @Override
        public void problem(InputProblem problem) {
            assertThat(problem.message()).isNotBlank();
            problems++;
        }
    }

    static byte[] json(String relative) throws Exception {
        Path f = SharedData.file(relative);
        try (InputStream in =
                relative.endsWith(".gz") ? new GZIPInputStream(Files.newInputStream(f)) : Files.newInputStream(f)) {
            return in.readAllBytes();
        }
    }

    static Stream<Arguments> mutants() throws Exception {
        List<Arguments> out = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(20261127);
        for (int t = 0; t < TRACES.length; t++) {
            byte[] a = json(TRACES[t]);
            byte[] b = json(TRACES[(t + 1) % TRACES.length]);
            for (int m = 0; m < MUTANTS_PER_TRACE; m++) {
                byte[] mutant;
                String how;
                switch (m % 4) {
                    case 0 -> {
                        int at = random.nextInt(a.length);
                        mutant = java.util.Arrays.copyOf(a, at);
                        how = "truncated at " + at;
                    }
                    case 1 -> {
                        mutant = a.clone();
                        int flips = 1 + random.nextInt(16);
                        for (int i = 0; i < flips; i++) {
                            int at = random.nextInt(mutant.length);
                            mutant[at] ^= (byte) (1 << random.nextInt(8));
                        }
                        how = flips + " bits flipped";
                    }
                    case 2 -> {
                        int cutA = random.nextInt(a.length);
                        int cutB = random.nextInt(b.length);
                        mutant = new byte[cutA + b.length - cutB];
                        System.arraycopy(a, 0, mutant, 0, cutA);
                        System.arraycopy(b, cutB, mutant, cutA, b.length - cutB);
                        how = "spliced at " + cutA + "/" + cutB;
                    }
                    default -> {
                        // a gzip stream cut short: the decompressor fails mid-file
                        byte[] gz = gzip(a);
                        mutant = java.util.Arrays.copyOf(gz, 1 + random.nextInt(gz.length - 1));
                        how = "gzip cut at " + mutant.length + " of " + gz.length;
                    }
                }
                boolean gz = m % 4 == 3;
                out.add(Arguments.of(TRACES[t] + " " + how, mutant, gz));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("mutants")
    void aMutantIsReadWithoutAnExceptionAndWithinTheSinkContract(String what, byte[] content, boolean gz)
            throws Exception {
        Path f = Files.write(dir.resolve(gz ? "mutant.json.gz" : "mutant.json"), content);
        ContractSink sink = new ContractSink();

        ReadSummary[] summary = new ReadSummary[1];
        assertThatCode(() -> summary[0] = KinetoReader.read(f, ReaderOptions.defaults(), sink))
                .as(what)
                .doesNotThrowAnyException();

        ReadSummary s = summary[0];
        assertThat(s.eventsRead()).isEqualTo(sink.events);
        if (!s.complete()) {
            assertThat(sink.problems)
                    .as("%s: read in part, but no problem said why", what)
                    .isPositive();
        }
    }

    @Test
    void memoryDoesNotFollowTheFileSize() throws Exception {
        // the largest trace here, 11x over (about 330 MB of JSON is never in memory at once)
        byte[] one = json("hta/df_index_resolver/df_index_resolver.json.gz");
        Path big = dir.resolve("big.json.gz");
        try (var out = new GZIPOutputStream(Files.newOutputStream(big))) {
            String text = new String(one, java.nio.charset.StandardCharsets.UTF_8);
            int open = text.indexOf('[', text.indexOf("\"traceEvents\""));
            int close = text.lastIndexOf(']');
            String events = text.substring(open + 1, close);
            out.write(text.substring(0, open + 1).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            for (int i = 0; i < 11; i++) {
                out.write(((i == 0 ? "" : ",") + events).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            }
            out.write(text.substring(close).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }

        // In its own JVM with a 96 MB heap: the read must finish, not run out of memory.
        Process p = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx96m",
                        "-cp",
                        System.getProperty("java.class.path"),
                        ReadMain.class.getName(),
                        big.toString())
                .redirectErrorStream(true)
                .start();
        String output;
        try (InputStream in = p.getInputStream()) {
            output = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
        assertThat(p.waitFor(180, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(output).isZero();
        String[] figures = output.lines()
                .filter(l -> l.startsWith("read "))
                .findFirst()
                .orElseThrow()
                .split(" ");
        assertThat(Long.parseLong(figures[1])).as("JSON bytes read").isGreaterThan(300_000_000L);
        ContractSink once = new ContractSink();
        KinetoReader.read(
                SharedData.file("hta/df_index_resolver/df_index_resolver.json.gz"), ReaderOptions.defaults(), once);
        assertThat(Long.parseLong(figures[2]))
                .as("events: 11 copies of the trace's")
                .isEqualTo(11 * once.events);
        assertThat(figures[3]).isEqualTo("true");
    }

    /** Reads one file and prints "read <decompressed bytes> <events> <complete>". */
    public static final class ReadMain {
        public static void main(String[] args) throws Exception {
            ContractSink sink = new ContractSink();
            ReadSummary s = KinetoReader.read(Path.of(args[0]), ReaderOptions.defaults(), sink);
            System.out.println("read " + s.decompressedBytes() + " " + sink.events + " " + s.complete());
        }
    }

    static byte[] gzip(byte[] b) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream z = new GZIPOutputStream(out)) {
            z.write(b);
        }
        return out.toByteArray();
    }
}
