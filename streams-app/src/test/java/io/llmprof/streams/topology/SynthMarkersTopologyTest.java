package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.synth.PassTruth;
import io.llmprof.agent.synth.RankTruth;
import io.llmprof.agent.synth.StepStyle;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A synth trace of each marker style, read by the agent's reader into batches in the order it emits them (the
 * lanes interleaved), through the topology: one pass per step, with the phase, batch, tokens and marker text of
 * synth's ground truth (vllm_v1 has the step on both lanes: the GPU-side copy decides, the same pass).
 */
class SynthMarkersTopologyTest {
    static final String LLAMA =
            """
            {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 4,
             "hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2,
             "vocab_size": 1000, "torch_dtype": "bfloat16"}
            """;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"profiler", "sglang", "vllm", "vllm_v1", "trtllm"})
    void everyStepIsOnePassWithTheGroundTruthsPhaseAndStep(String style) throws IOException {
        Path config = Files.writeString(dir.resolve("llama_config.json"), LLAMA);
        StepStyle steps = StepStyle.parse(style, "prefill:1,decode:3");
        RankTruth truth = SynthTrace.write(
                        SynthSpec.builder(config)
                                .passes(8)
                                .batchSize(16)
                                .steps(steps)
                                .build(),
                        dir.resolve("rank-0.json"))
                .rank(0);
        List<Golden.InputRecord> records = batches(truth.file(), 40);
        try (Harness h = new Harness(
                dir.resolve("state"), new Golden.Segmenter("generic", truth.anchorPattern(), truth.layers()))) {
            h.pipe(records);
            List<PassRecord> passes = h.passes.readValuesToList();
            assertThat(passes).hasSize(8);
            for (int p = 0; p < 8; p++) {
                PassRecord pass = passes.get(p);
                PassTruth pt = truth.passTruths().get(p);
                assertThat(pass.boundary()).as("pass %d", p).isEqualTo("marker");
                assertThat(pass.step()).as("pass %d", p).isEqualTo(pt.step());
                assertThat(pass.phase()).as("pass %d", p).isEqualTo("profiler".equals(style) ? null : pt.phase());
                assertThat(pass.batchSize()).isEqualTo("profiler".equals(style) ? null : Integer.valueOf(16));
                assertThat(pass.tokens()).as("pass %d", p).isEqualTo(steps.tokens(p, 16));
                assertThat(pass.kernels()).isEqualTo(truth.kernelsPerPass());
                assertThat(pass.complete()).isTrue();
                assertThat(pass.layerCount()).isEqualTo(truth.layers());
                assertThat(pass.closedBy()).isEqualTo(p < 7 ? "step_marker" : "end_of_trace");
                assertThat(pass.startNs()).isLessThanOrEqualTo(pt.firstKernelStartNs());
                assertThat(pass.endNs()).isGreaterThanOrEqualTo(pt.lastKernelEndNs());
            }
            assertThat(h.anomalies.readValuesToList()).isEmpty();
        }
    }

    /** The file as the agent would ship it: batches of {@code size} per lane, in the reader's emission order. */
    static List<Golden.InputRecord> batches(Path file, int size) throws IOException {
        List<Golden.InputRecord> out = new ArrayList<>();
        Map<TraceBatch.Lane, List<TraceEvent>> open = new EnumMap<>(TraceBatch.Lane.class);
        Map<TraceBatch.Lane, Long> first = new EnumMap<>(TraceBatch.Lane.class);
        KinetoReader.read(file, ReaderOptions.defaults(), new OrderedSink() {
            @Override
            public void event(String rank, TraceBatch.Lane lane, long index, TraceEvent e) {
                List<TraceEvent> events = open.computeIfAbsent(lane, l -> new ArrayList<>());
                first.putIfAbsent(lane, index);
                events.add(e);
                if (events.size() == size) {
                    flush(rank, lane, false);
                }
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {
                flush(rank, lane, true);
            }

            void flush(String rank, TraceBatch.Lane lane, boolean end) {
                List<TraceEvent> events = open.remove(lane);
                Long idx = first.remove(lane);
                TraceBatch b = new TraceBatch(
                        "synth",
                        "run",
                        rank,
                        lane,
                        file.getFileName().toString(),
                        idx == null ? nextIndex(lane) : idx,
                        events == null ? List.of() : events,
                        end);
                next.put(lane, b.firstIndex() + b.events().size());
                out.add(new Golden.InputRecord(b.key(), 1_000 + out.size(), b));
            }

            final Map<TraceBatch.Lane, Long> next = new EnumMap<>(TraceBatch.Lane.class);

            long nextIndex(TraceBatch.Lane lane) {
                return next.getOrDefault(lane, 0L);
            }
        });
        return out;
    }
}
