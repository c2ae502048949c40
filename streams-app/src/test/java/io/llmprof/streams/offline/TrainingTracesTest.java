package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import io.llmprof.streams.support.SharedData;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The HTA training traces of ../shared/data: every ProfilerStep is one training-step pass, whole, labelled training,
 * in analyze layers and analyze host.
 *
 * <p>Checked by hand (python3 over the .json.gz):
 * per host {@code ProfilerStep#N}, the kernels whose launch (runtime call with a correlation) starts inside it, the
 * {@code autograd::engine::evaluate_function} / {@code XxxBackwardN} cpu_ops and the {@code Optimizer.step#} /
 * {@code zero_grad#} annotations inside it. Every step of these files has both (e.g. nccl_data: 523 backward ops and
 * 2 optimizer annotations per step; the MI250 toy: 10 and 1, and its ProfilerStep#2 launches nothing, so no pass,
 * yet a host window).
 * Kernels per step: MI250 14; df_index_resolver 3874 x 5; nccl_data 900 x 3; ns_resolution 870 x 5; trace_diff
 * control 1428 x 6; sampled_rank-0 577 x 2; sampled_rank-1 552 x 2. In rank0 of negative_queue_length_values_check
 * (TorchRec, CUDA graphs) and trace_diff test the steps overlap on the GPU: of rank0's 1075 kernels per step only 370
 * start before the next step's first GPU event (trace_diff test: 728, 805, 1555, 990, 850 then all 1555), and a pass
 * holds those; the first pass also holds the 705 (528) kernels without a launch event in the trace (launched before
 * the profiler started) that run among them: 370 + 705 = 1075, 728 + 528 = 1256.
 */
class TrainingTracesTest {

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz | 1 | 14 | 2",
                "hta/df_index_resolver/df_index_resolver.json.gz | 2 | 3874,3874,3874,3874,3874 | 5",
                "hta/nccl_parser_config/nccl_data.json.gz | 4 | 900,900,900 | 3",
                "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz | 101 | 870,870,870,870,870 | 5",
                "hta/trace_diff/control/control.json.gz | 1009 | 1428,1428,1428,1428,1428,1428 | 6",
                "hta/trace_filter/sampled_rank-0.json.gz | 551 | 577,577 | 2",
                "hta/trace_filter/sampled_rank-1.json.gz | 551 | 552,552 | 2",
                "hta/negative_queue_length_values_check/rank0.json.gz | 550 | 1075,370,370,370,1075 | 5",
                "hta/trace_diff/test/test.json.gz | 1009 | 1256,805,1555,990,850,1555 | 6"
            })
    void everyProfilerStepIsOneWholeTrainingPass(String file, int firstStep, String kernels, int hostSteps)
            throws Exception {
        String trace = SharedData.file(file).toString();
        AnalyzeLayersCommandTest.Out json =
                AnalyzeLayersCommandTest.analyze("layers", "--trace", trace, "--format", "json");
        assertThat(json.code()).isZero();
        JsonNode doc = Json.mapper().readTree(json.out());
        assertThat(doc.get("workload").asText()).isEqualTo("training");
        assertThat(doc.get("anchor").isNull())
                .as("no anchor detection on a training rank")
                .isTrue();
        JsonNode passes = doc.get("ranks").get(0).get("passes");
        List<Integer> expected =
                Arrays.stream(kernels.split(",")).map(Integer::valueOf).toList();
        List<Integer> actual = new ArrayList<>();
        for (int i = 0; i < passes.size(); i++) {
            JsonNode p = passes.get(i);
            actual.add(p.get("kernels").asInt());
            assertThat(p.get("step").asText()).isEqualTo("ProfilerStep#" + (firstStep + i));
            assertThat(p.get("workload").asText()).isEqualTo("training");
            assertThat(p.get("boundary").asText()).isEqualTo("marker");
            assertThat(p.get("complete").asBoolean()).isTrue();
            assertThat(p.get("phase").isNull()).isTrue();
            assertThat(p.get("layers")).isEmpty();
        }
        assertThat(actual).containsExactlyElementsOf(expected);

        AnalyzeLayersCommandTest.Out text = AnalyzeLayersCommandTest.analyze("layers", "--trace", trace);
        assertThat(text.out())
                .contains("workload: training: " + expected.size() + " of " + expected.size() + " passes are training"
                        + " steps")
                .doesNotContain("incomplete_pass");

        AnalyzeLayersCommandTest.Out host = AnalyzeLayersCommandTest.analyze(
                "host", "--trace", trace, "--window-source", "marker", "--format", "json");
        JsonNode h = Json.mapper().readTree(host.out());
        assertThat(h.get("workload").asText()).isEqualTo("training");
        assertThat(h.at("/steps/count").asLong())
                .as("one window per host ProfilerStep")
                .isEqualTo(hostSteps);
    }

    /** The overlapped steps say where their late kernels went. */
    @Test
    void kernelsOfAStepRunningAfterTheNextStepStartedAreNotedNotMadeIntoASecondPass() throws Exception {
        String trace = SharedData.file("hta/negative_queue_length_values_check/rank0.json.gz")
                .toString();
        JsonNode passes = Json.mapper()
                .readTree(AnalyzeLayersCommandTest.analyze("layers", "--trace", trace, "--format", "json")
                        .out())
                .get("ranks")
                .get(0)
                .get("passes");
        assertThat(passes).hasSize(5);
        assertThat(passes.get(2).get("notes").toString())
                .contains("GPU event(s) of a step whose pass had closed (they ran after the next step's first GPU"
                        + " events) belong to no pass");
    }

    @Test
    void anInferenceTraceIsLabelledInferenceInTextAndJson() throws Exception {
        String trace = SharedData.file("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
                .toString();
        AnalyzeLayersCommandTest.Out text = AnalyzeLayersCommandTest.analyze("layers", "--trace", trace);
        assertThat(text.out()).contains("workload: inference (no backward op or optimizer step in any pass)");
        AnalyzeLayersCommandTest.Out host = AnalyzeLayersCommandTest.analyze("host", "--trace", trace);
        assertThat(host.out()).contains("workload: inference (no backward op or optimizer step in the trace)");
        AnalyzeLayersCommandTest.Out hostTraining = AnalyzeLayersCommandTest.analyze(
                "host",
                "--trace",
                SharedData.file("hta/nccl_parser_config/nccl_data.json.gz").toString());
        assertThat(hostTraining.out())
                .contains("workload: training (backward ops and an optimizer step in the trace): a step window is one"
                        + " training step (forward + backward + optimizer)");
    }
}
