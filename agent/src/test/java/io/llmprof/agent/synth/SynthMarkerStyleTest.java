package io.llmprof.agent.synth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SynthMarkerStyleTest {
    @TempDir
    Path dir;

    private SynthSpec.Builder tiny(String style) throws IOException {
        return SynthSpec.builder(TinyConfigs.llama(dir))
                .passes(5)
                .batchSize(8)
                .steps(StepStyle.parse(style, "prefill:1,decode:2"));
    }

    @Test
    void sglangStyleWritesStepMarkersWithThePhasePatternOnTheHostOnly() throws IOException {
        RankTruth t =
                SynthTrace.write(tiny("sglang").build(), dir.resolve("s.json")).rank(0);
        ParsedTrace trace = ParsedTrace.read(t.file());
        assertThat(trace.byCat("user_annotation"))
                .extracting(e -> e.path("name").asText())
                .containsExactly(
                        "step[EXTEND bs=8 toks=1024]",
                        "step[DECODE bs=8]",
                        "step[DECODE bs=8]",
                        "step[EXTEND bs=8 toks=1024]",
                        "step[DECODE bs=8]");
        assertThat(trace.byCat("gpu_user_annotation")).isEmpty();
        assertThat(t.passTruths())
                .extracting(PassTruth::phase)
                .containsExactly("prefill", "decode", "decode", "prefill", "decode");
        assertThat(t.passTruths().get(0).step()).isEqualTo("step[EXTEND bs=8 toks=1024]");
    }

    @Test
    void vllmV1StyleWritesTheV1TextOnTheHostAndAsAGpuAnnotationCoveringThePass() throws IOException {
        RankTruth t =
                SynthTrace.write(tiny("vllm_v1").build(), dir.resolve("v.json")).rank(0);
        ParsedTrace trace = ParsedTrace.read(t.file());
        List<String> expected = List.of(
                "execute_context_8(1024)_generation_0(0)",
                "execute_context_0(0)_generation_8(8)",
                "execute_context_0(0)_generation_8(8)",
                "execute_context_8(1024)_generation_0(0)",
                "execute_context_0(0)_generation_8(8)");
        assertThat(trace.byCat("user_annotation"))
                .extracting(e -> e.path("name").asText())
                .containsExactlyElementsOf(expected);
        assertThat(trace.byCat("gpu_user_annotation"))
                .extracting(e -> e.path("name").asText())
                .containsExactlyElementsOf(expected);
        for (int p = 0; p < 5; p++) {
            var gpu = trace.byCat("gpu_user_annotation").get(p);
            long startNs = Math.round(gpu.path("ts").asDouble() * 1000);
            long endNs = startNs + Math.round(gpu.path("dur").asDouble() * 1000);
            PassTruth pt = t.passTruths().get(p);
            assertThat(startNs).as("pass %d", p).isLessThanOrEqualTo(pt.firstKernelStartNs());
            assertThat(endNs).as("pass %d", p).isGreaterThanOrEqualTo(pt.lastKernelEndNs());
        }
        StepStyle style = StepStyle.parse("vllm_v1", "prefill:1,decode:2");
        assertThat(List.of(style.tokens(0, 8), style.tokens(1, 8))).containsExactly(1024L, 8L);
    }

    @Test
    void trtllmStyleWritesTheExecutorForwardStepWithItsRequestCounts() throws IOException {
        RankTruth t =
                SynthTrace.write(tiny("trtllm").build(), dir.resolve("t.json")).rank(0);
        assertThat(ParsedTrace.read(t.file()).byCat("user_annotation"))
                .extracting(e -> e.path("name").asText())
                .containsExactly(
                        "[Executor] _forward_step 0: 8 ctx reqs, 0 gen reqs",
                        "[Executor] _forward_step 1: 0 ctx reqs, 8 gen reqs",
                        "[Executor] _forward_step 2: 0 ctx reqs, 8 gen reqs",
                        "[Executor] _forward_step 3: 8 ctx reqs, 0 gen reqs",
                        "[Executor] _forward_step 4: 0 ctx reqs, 8 gen reqs");
        assertThat(StepStyle.parse("trtllm", "decode:1").tokens(0, 8)).isNull();
    }

    /**
     * --prefill-scale: the kernels of a prefill pass take the factor times as long (its GPU span grows about that
     * much), decode passes keep their durations, the kernels stay the same; 1 is the default and the same bytes.
     */
    @Test
    void prefillScaleLengthensOnlyThePrefillPasses() throws IOException {
        // the demo model's shapes (2 of its layers) and graph launches, as the demo: with a tiny model or eager
        // launches, kernel floors, gaps and the host's launch rate would bound the span, not the kernels
        Path config = dir.resolve("llama-2l.json");
        Files.writeString(
                config,
                """
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2,
                 "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 128256, "torch_dtype": "bfloat16"}
                """);
        SynthSpec.Builder graph = SynthSpec.builder(config)
                .passes(5)
                .batchSize(8)
                .steps(StepStyle.parse("sglang", "prefill:1,decode:2"))
                .launch(LaunchMode.GRAPH);
        RankTruth plain = SynthTrace.write(graph.build(), dir.resolve("a.json")).rank(0);
        RankTruth one = SynthTrace.write(graph.prefillScale(1).build(), dir.resolve("b.json"))
                .rank(0);
        assertThat(Files.readAllBytes(one.file())).isEqualTo(Files.readAllBytes(plain.file()));
        RankTruth scaled = SynthTrace.write(graph.prefillScale(8).build(), dir.resolve("c.json"))
                .rank(0);
        for (int p = 0; p < 5; p++) {
            PassTruth a = plain.passTruths().get(p);
            PassTruth b = scaled.passTruths().get(p);
            double ratio = (double) (b.lastKernelEndNs() - b.firstKernelStartNs())
                    / (a.lastKernelEndNs() - a.firstKernelStartNs());
            assertThat(b.kernels()).isEqualTo(a.kernels());
            if (a.phase().equals("prefill")) {
                assertThat(ratio).as("pass %d", p).isBetween(6.0, 9.0);
            } else {
                assertThat(ratio).as("pass %d", p).isBetween(0.97, 1.03);
            }
        }
        assertThatThrownBy(() -> graph.prefillScale(0.5).build()).hasMessageContaining("prefill scale");
        assertThatThrownBy(() -> graph.prefillScale(1001).build()).hasMessageContaining("prefill scale");
    }

    @Test
    void vllmStyleWritesExecuteMarkers() throws IOException {
        RankTruth t =
                SynthTrace.write(tiny("vllm").build(), dir.resolve("v.json")).rank(0);
        ParsedTrace trace = ParsedTrace.read(t.file());
        assertThat(trace.byCat("user_annotation"))
                .extracting(e -> e.path("name").asText())
                .startsWith("execute_1024_context_8(sq1024)_generation_0()", "execute_8_context_0()_generation_8(sq8)");
    }

    @Test
    void theProfilerStyleIsTheDefaultAndKeepsItsGpuAnnotations() throws IOException {
        RankTruth t = SynthTrace.write(tiny("profiler").build(), dir.resolve("p.json"))
                .rank(0);
        ParsedTrace trace = ParsedTrace.read(t.file());
        assertThat(trace.byCat("user_annotation"))
                .extracting(e -> e.path("name").asText())
                .containsExactly(
                        "ProfilerStep#0", "ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4");
        assertThat(trace.byCat("gpu_user_annotation")).hasSize(5);
        assertThat(SynthSpec.builder(TinyConfigs.llama(dir)).build().steps()).isEqualTo(StepStyle.DEFAULT);
    }

    @Test
    void badStylesAndPatternsAreClearErrors() {
        assertThatThrownBy(() -> StepStyle.parse("tgi", "decode:1"))
                .hasMessageContaining("profiler, sglang, vllm, vllm_v1 or trtllm");
        assertThatThrownBy(() -> StepStyle.parse("sglang", "decode")).hasMessageContaining("decode:7");
        assertThatThrownBy(() -> StepStyle.parse("sglang", "warmup:1")).hasMessageContaining("prefill or decode");
        assertThatThrownBy(() -> StepStyle.parse("sglang", "decode:0")).hasMessageContaining("at least 1");
    }
}
