package io.llmprof.agent.kineto;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every Kineto trace in ../shared/data. Expected numbers come from an independent Python pass (json with
 * Decimal floats): ph X events by category, kernels, rank by the same rules, and the earliest kernel start in
 * exact ns.
 */
class RealTracesTest {
    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            textBlock =
                    """
            # file                                                                    | kernels | host   | gpu   | rank  | first kernel ns
            hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz                  | 14      | 94     | 18    | pid2  | 4203669603771648
            hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz   | 3       | 45     | 6     | 0     | 1712867402348700000
            hta/df_index_resolver/df_index_resolver.json.gz                           | 19370   | 101088 | 22290 | 1     | 1669783687389324000
            hta/nccl_parser_config/nccl_data.json.gz                                  | 2700    | 23128  | 3804  | 0     | 4458676422880181
            hta/negative_queue_length_values_check/rank0.json.gz                      | 6080    | 59469  | 7747  | 0     | 1683564901553999000
            hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz      | 4350    | 39309  | 6110  | 0     | 1712195495505582988
            hta/trace_diff/control/control.json.gz                                    | 8568    | 65486  | 9450  | 3     | 1661203462600478000
            hta/trace_diff/test/test.json.gz                                          | 9876    | 52691  | 15632 | 1     | 1661938466265584000
            hta/trace_filter/sampled_rank-0.json.gz                                   | 1154    | 3606   | 1204  | 0     | 1682725898082228000
            hta/trace_filter/sampled_rank-1.json.gz                                   | 1104    | 3521   | 1154  | 1     | 1682725898082381000
            hta/triton_example/triton_example.json.gz                                 | 1       | 6      | 1     | pid0  | 2413669097444592
            nano-vllm/forward_50.json                                                 | 8       | 764    | 28    | 0     | 3572693961829565
            nano-vllm/profile_results/decode_gpu_0.json                               | 17      | 496    | 28    | 0     | 2903534561281094
            nano-vllm/profile_results/decode_gpu_100.json                             | 9       | 399    | 15    | 0     | 2903593413582822
            nano-vllm/store_kvcache.json                                              | 1       | 2      | 1     | 0     | 1656857809237050
            tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz                    | 1465    | 6109   | 1708  | pid0  | 1428625731622250
            tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz                   | 1516    | 6327   | 1518  | pid2  | 2241346127176383
            tracelens/mi210/gpu_only_trace/gpu_only_trace.json.gz                     | 562     | 631    | 562   | pid1  | 6869181218039954
            tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz          | 555     | 92     | 558   | 0     | 4909914216285224
            tracelens/inference/sglang_decode/capture_traces/bs_32_rank0.json.gz      | 2       | 5058   | 3     | 0     | 4909733316061579
            tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz | 527 | 4857   | 534   | 0     | 4909913692278281
            tracelens/inference/vllm_decode_full/graph_execution.json.gz              | 425     | 121    | 434   | 0     | 6520618861901761
            tracelens/inference/vllm_decode_full/capture_traces/graph_capture_rank_0.1773709742341309550.pt.trace.json.gz | 7 | 6973 | 11 | 0 | 6520430065016281
            tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz  | 413     | 1024   | 423   | 0     | 6520488584644134
            tracelens/inference/vllm_prefilldecode_piecewise/capture_traces/graph_capture_rank_0.1773709679453551615.pt.trace.json.gz | 99 | 6821 | 101 | 0 | 6520367186398032
            """)
    void readsEveryKernelOfARealTrace(String file, long kernels, long host, long gpu, String rank, long firstKernelNs)
            throws IOException {
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = KinetoReader.read(SharedData.file(file), ReaderOptions.defaults(), sink);

        assertThat(summary.kernels()).isEqualTo(kernels);
        assertThat(summary.ranks()).containsExactly(rank);
        assertThat(sink.lane(rank, Lane.HOST)).hasSize((int) host);
        List<TraceEvent> gpuLane = sink.lane(rank, Lane.GPU);
        assertThat(gpuLane).hasSize((int) gpu);
        assertThat(gpuLane.stream()
                        .filter(e -> e.kind() == TraceEvent.Kind.KERNEL)
                        .count())
                .isEqualTo(kernels);
        assertThat(gpuLane.stream()
                        .filter(e -> e.kind() == TraceEvent.Kind.KERNEL)
                        .mapToLong(TraceEvent::startNs)
                        .min()
                        .orElseThrow())
                .isEqualTo(firstKernelNs);
        assertThat(summary.complete()).isTrue();
        assertThat(summary.problems())
                .extracting(InputProblem::kind)
                .doesNotContain(
                        AnomalyKind.TRUNCATED_INPUT,
                        AnomalyKind.INVALID_JSON,
                        AnomalyKind.MISSING_TS,
                        AnomalyKind.NEGATIVE_DURATION,
                        AnomalyKind.NO_KERNELS);
        assertThat(sink.ends).containsExactly(rank + "/HOST", rank + "/GPU");
        // GPU activity is never late: Kineto writes it in order per device.
        assertThat(gpuLane).extracting(TraceEvent::startNs).isSorted();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            textBlock =
                    """
            hta/mtia_trace_single_rank/mtia_rank_0.json.gz                                   | 109103 | 0
            hta/mtia_inference_trace/mtia_inference_rank_0.json.gz                           | 12042  | 0
            hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz                       | 15     | 34
            hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz              | 2245   |
            """)
    void reportsNoKernelsForTracesWithoutGpuKernels(String file, long host, String rank) throws IOException {
        RecordingSink sink = new RecordingSink();

        ReadSummary summary = KinetoReader.read(SharedData.file(file), ReaderOptions.defaults(), sink);

        assertThat(summary.kernels()).isZero();
        assertThat(summary.eventsRead()).isEqualTo(host);
        assertThat(summary.complete()).isTrue();
        assertThat(summary.problems()).extracting(InputProblem::kind).containsExactly(AnomalyKind.NO_KERNELS);
        if (rank != null) {
            assertThat(summary.ranks()).containsExactly(rank);
        } else {
            // distributedInfo comes after traceEvents here: the pid of the first event names the rank.
            assertThat(summary.ranks()).singleElement().asString().startsWith("pid");
        }
    }

    @org.junit.jupiter.api.Test
    void countsTheSecondThreadOfDfIndexResolverAsLateWithTheDefaultWindowButNotWithALargerOne() throws IOException {
        Path file = SharedData.file("hta/df_index_resolver/df_index_resolver.json.gz");

        ReadSummary small = KinetoReader.read(file, ReaderOptions.defaults(), new RecordingSink());
        RecordingSink sink = new RecordingSink();
        ReadSummary large = KinetoReader.read(file, ReaderOptions.defaults().withReorderWindow(1 << 17), sink);

        // Kineto wrote one host thread's 69,550 events, then the other's 31,538: displacement 70,184 > 65,536.
        assertThat(small.outOfOrder()).isEqualTo(2965);
        assertThat(small.problems()).extracting(InputProblem::kind).containsExactly(AnomalyKind.OUT_OF_ORDER);
        assertThat(large.outOfOrder()).isZero();
        assertThat(sink.lane("1", Lane.HOST)).extracting(TraceEvent::startNs).isSorted();
    }
}
