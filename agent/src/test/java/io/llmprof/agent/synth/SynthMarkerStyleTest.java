package io.llmprof.agent.synth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Path;
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
        assertThatThrownBy(() -> StepStyle.parse("trtllm", "decode:1"))
                .hasMessageContaining("profiler, sglang or vllm");
        assertThatThrownBy(() -> StepStyle.parse("sglang", "decode")).hasMessageContaining("decode:7");
        assertThatThrownBy(() -> StepStyle.parse("sglang", "warmup:1")).hasMessageContaining("prefill or decode");
        assertThatThrownBy(() -> StepStyle.parse("sglang", "decode:0")).hasMessageContaining("at least 1");
    }
}
