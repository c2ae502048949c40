package io.llmprof.streams.boundary;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.NullAndEmptySource;
import org.junit.jupiter.params.provider.ValueSource;

class StepMarkerTest {
    static Stream<Arguments> markers() {
        return Stream.of(
                Arguments.of("ProfilerStep#6", StepMarker.Family.PROFILER, null, null, null),
                Arguments.of("ProfilerStep#0", StepMarker.Family.PROFILER, null, null, null),
                Arguments.of("step[DECODE bs=32]", StepMarker.Family.SGLANG, "decode", 32, null),
                Arguments.of("step[EXTEND bs=15 toks=15360]", StepMarker.Family.SGLANG, "prefill", 15, 15_360L),
                Arguments.of("step[MIXED bs=8 toks=4096]", StepMarker.Family.SGLANG, "mixed", 8, 4_096L),
                Arguments.of("step[IDLE]", StepMarker.Family.SGLANG, null, null, null),
                Arguments.of("step[TARGET_VERIFY bs=4 foo=2]", StepMarker.Family.SGLANG, null, 4, null),
                // the real traces' texts
                Arguments.of(
                        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq32sqsk32785)",
                        StepMarker.Family.VLLM,
                        "decode",
                        32,
                        32L),
                Arguments.of(
                        "execute_15360_context_15(sq15360sk15360sqsq15728640sqsk15728640)_generation_0(sq0sk0sqsq0sqsk0)",
                        StepMarker.Family.VLLM,
                        "prefill",
                        15,
                        15_360L),
                Arguments.of(
                        "execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)",
                        StepMarker.Family.VLLM,
                        "mixed",
                        46,
                        8_192L),
                Arguments.of("execute_0_context_0()_generation_0()", StepMarker.Family.VLLM, null, 0, 0L),
                Arguments.of("execute_7_context_0_generation_7", StepMarker.Family.VLLM, "decode", 7, 7L));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("markers")
    void parsesFamilyPhaseBatchAndTokens(String text, StepMarker.Family family, String phase, Integer bs, Long tokens) {
        StepMarker m = StepMarker.parse(text);
        assertThat(m).isNotNull();
        assertThat(m.family()).isEqualTo(family);
        assertThat(m.text()).isEqualTo(text);
        assertThat(m.phase()).isEqualTo(phase);
        assertThat(m.batchSize()).isEqualTo(bs);
        assertThat(m.tokens()).isEqualTo(tokens);
        assertThat(m.note() != null).isEqualTo(phase == null && family != StepMarker.Family.PROFILER);
        assertThat(StepMarker.mayBeMarker(text)).isTrue();
    }

    @ParameterizedTest(name = "\"{0}\" is not a marker")
    @NullAndEmptySource
    @ValueSource(
            strings = {
                "ProfilerStep#",
                "ProfilerStep#x",
                "ProfilerStep#6 ",
                "profilerstep#6",
                "ProfilerStep#99999999999999999999999",
                "step[decode bs=32]",
                "step[DECODE bs=]",
                "step[DECODE bs=32",
                "step[DECODE  bs=32]",
                "step[DECODE bs=-1]",
                "step[DECODE bs=99999999999999999999999]",
                "step[]",
                "step",
                "execute_",
                "execute_32_context_0",
                "execute_32_context_x()_generation_32()",
                "execute_32_context_0(a(b))_generation_32()",
                "execute_32_context_0()_generation_99999999999()",
                "capture_32_DECODE",
                "## Call CompiledFxGraph ##",
                "aten::mm",
                "cudaGraphLaunch"
            })
    void malformedTextIsNotAMarkerAndNeverThrows(String text) {
        assertThat(StepMarker.parse(text)).isNull();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"step[DECODE bs=3000000000]"})
    void aBatchSizeBeyondIntIsUnknownNotAnError(String text) {
        StepMarker m = StepMarker.parse(text);
        assertThat(m).isNotNull();
        assertThat(m.batchSize()).isNull();
        assertThat(m.phase()).isEqualTo("decode");
    }
}
