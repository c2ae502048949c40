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
                Arguments.of("execute_7_context_0_generation_7", StepMarker.Family.VLLM, "decode", 7, 7L),
                // vLLM V1 default (gpu_worker.annotate_profile): requests and tokens per side
                Arguments.of("execute_context_1(8192)_generation_0(0)", StepMarker.Family.VLLM, "prefill", 1, 8_192L),
                Arguments.of("execute_context_0(0)_generation_32(32)", StepMarker.Family.VLLM, "decode", 32, 32L),
                Arguments.of("execute_context_9(8155)_generation_37(37)", StepMarker.Family.VLLM, "mixed", 46, 8_192L),
                Arguments.of("execute_context_0(0)_generation_0(0)", StepMarker.Family.VLLM, null, 0, 0L),
                // vLLM 0.10 .. 0.13: new and cached request counts only
                Arguments.of("execute_new_4_cached_0", StepMarker.Family.VLLM, "prefill", 4, null),
                Arguments.of("execute_new_0_cached_32", StepMarker.Family.VLLM, null, 32, null),
                Arguments.of("execute_new_2_cached_30", StepMarker.Family.VLLM, null, 32, null),
                Arguments.of("execute_new_0_cached_0", StepMarker.Family.VLLM, null, 0, null),
                // SGLang: modes in either case (the proposal of sglang#23419 wrote them lower case), roofline keys
                Arguments.of("step[decode bs=32]", StepMarker.Family.SGLANG, "decode", 32, null),
                Arguments.of("step[prefill bs=2 toks=512]", StepMarker.Family.SGLANG, "prefill", 2, 512L),
                Arguments.of(
                        "step[EXTEND bs=1 toks=1025 c_sqsq=1050625 c_sqsk=1050625 c_sk=1025]",
                        StepMarker.Family.SGLANG,
                        "prefill",
                        1,
                        1_025L),
                Arguments.of(
                        "step[DECODE bs=64 g_sqsq=64 g_sqsk=100032 g_sk=100032]",
                        StepMarker.Family.SGLANG,
                        "decode",
                        64,
                        null),
                Arguments.of(
                        "step[MIXED bs=66 c=2 g=64 c_sq=2048 c_sk=2048 c_sqsq=2097152 c_sqsk=2097152 g_sq=64"
                                + " g_sk=65600 g_sqsq=64 g_sqsk=65600]",
                        StepMarker.Family.SGLANG,
                        "mixed",
                        66,
                        2_112L),
                Arguments.of("step[SPLIT_PREFILL bs=1 toks=4096]", StepMarker.Family.SGLANG, "prefill", 1, 4_096L),
                // TensorRT-LLM PyExecutor, with and without the iteration number, and the oldest form
                Arguments.of(
                        "[Executor] _forward_step 12: 2 ctx reqs, 30 gen reqs",
                        StepMarker.Family.TRTLLM,
                        "mixed",
                        32,
                        null),
                Arguments.of(
                        "[Executor] _forward_step 13: 0 ctx reqs, 32 gen reqs",
                        StepMarker.Family.TRTLLM,
                        "decode",
                        32,
                        null),
                Arguments.of(
                        "[Executor] _forward_step: 4 ctx reqs, 0 gen reqs",
                        StepMarker.Family.TRTLLM,
                        "prefill",
                        4,
                        null),
                Arguments.of("_forward_step: 1 ctx reqs, 1 gen reqs", StepMarker.Family.TRTLLM, "mixed", 2, null),
                Arguments.of("[Executor] _forward_step 7", StepMarker.Family.TRTLLM, null, null, null));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("markers")
    void parsesFamilyPhaseBatchAndTokens(String text, StepMarker.Family family, String phase, Integer bs, Long tokens) {
        StepMarker m = StepMarker.parse(text);
        assertThat(m).isNotNull();
        assertThat(m.family()).isEqualTo(family);
        assertThat(m.form().family()).isEqualTo(family);
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
                "execute_context_1_generation_0",
                "execute_context_1(8192)_generation_0",
                "execute_context_1(sq8192)_generation_0(sq0)",
                "execute_new_4",
                "execute_new_x_cached_0",
                "[Executor] _forward_step 12: 2 ctx reqs",
                "[Executor] _forward_step x: 2 ctx reqs, 3 gen reqs",
                "PyExecutor._forward_step",
                "capture_32_DECODE",
                "## Call CompiledFxGraph ##",
                "aten::mm",
                "cudaGraphLaunch"
            })
    void malformedTextIsNotAMarkerAndNeverThrows(String text) {
        assertThat(StepMarker.parse(text)).isNull();
    }

    /** What "looks like a step but is no form llmprof knows" means, and the shape one notice covers. */
    @ParameterizedTest(name = "{0} -> {1}")
    @org.junit.jupiter.params.provider.CsvSource(
            delimiter = '|',
            value = {
                "execute_context_1(8192)_generation_0|execute_context_N(N)_generation_N",
                "execute_model|execute_model",
                "step[DECODE bs=]|step[DECODE bs=]",
                "step[DECODE  bs=32]|step[DECODE  bs=N]",
                "step[]|step[]",
                "ProfilerStep#x|ProfilerStep#x",
                "[Executor] _forward_step 12: 2 ctx reqs|[Executor] _forward_step N: N ctx reqs",
                "PyExecutor._forward_step|PyExecutor._forward_step"
            })
    void textThatLooksLikeAStepButMatchesNoFormHasAnUnknownForm(String text, String form) {
        assertThat(StepMarker.parse(text)).isNull();
        assertThat(StepMarker.unknownForm(text)).isEqualTo(form);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "ProfilerStep#6",
                "execute_context_0(0)_generation_32(32)",
                "step[DECODE bs=32]",
                "capture_32_DECODE",
                "## Call CompiledFxGraph ##",
                "aten::mm",
                "Optimizer.step#SGD.step"
            })
    void knownFormsAndOtherAnnotationsHaveNoUnknownForm(String text) {
        assertThat(StepMarker.unknownForm(text)).isNull();
    }

    @org.junit.jupiter.api.Test
    void bareWordsInAnSglangStepAreKeptOutAndSaidInTheNote() {
        StepMarker m = StepMarker.parse("step[DECODE smc-head-graph bs=4 toks=8]");
        assertThat(m).isNotNull();
        assertThat(m.phase()).isEqualTo("decode");
        assertThat(m.batchSize()).isEqualTo(4);
        assertThat(m.tokens()).isEqualTo(8L);
        assertThat(m.note()).contains("smc-head-graph");
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
