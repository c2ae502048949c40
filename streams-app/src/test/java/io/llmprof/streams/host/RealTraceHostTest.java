package io.llmprof.streams.host;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostSums;
import io.llmprof.streams.support.SharedData;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Real Kineto LLM traces through the agent's reader (both lanes, as the reader delivers them: every host event
 * before the GPU activity) and the host tracker. Expected figures were computed by hand with python3 over the
 * JSON (Decimal µs -> ns; "X" events; GPU = kernel/gpu_memcpy/gpu_memset; launched work = GPU events whose
 * args.correlation is a cuda_runtime/cuda_driver launch, copy or memset call starting inside the marker's range;
 * window end = max(marker end, last end of launched work); busy = union of GPU intervals clipped to the window;
 * counts = events starting in [start, end); launch time = launch calls clipped, names version-stripped).
 *
 * <ul>
 *   <li>vLLM FULL-graph decode (MI300X): one host marker {@code execute_32_context_0(...)_generation_32(...)}
 *       [6520618853487.683, +2408.598 us]; its 14 launches (one hipGraphLaunch) ran until 6520618872601.742, so the
 *       window is 19114.059 us, busy 10717.708 us, 425 kernels (421 from the graph: correlation of the
 *       hipGraphLaunch) + 9 memcpy, 5 launch calls of 20 API calls, launch time 531.667 us. Phase decode ->
 *       generation.
 *   <li>SGLang Qwen3-8B decode (MI300X): step[DECODE bs=32] inside an execute_ wrapper (a lesser marker family:
 *       no window). Range [4909914216408.420, 4909914681656.474]; its graph (corr 92178) ran on stream 3 until
 *       4909914689963.940 while a later launch (corr 92183) ran on stream 2 in the middle: the window still ends
 *       with the graph. 553 kernels (544 graph) + 1 memcpy start inside, busy 9706.189 us, 9 launch calls of 24,
 *       launch time 1633.171 us.
 *   <li>HF eager Qwen1.5-0.5B (H100): host ProfilerStep#6 [1428625731896.179, 1428625779047.574], launched work
 *       until 1428625781275.082; 1459 kernels + 240 memcpy/memset start inside, busy 45382.492 us, 1029 launch
 *       calls of 1922, launch time 4098.678 us; no graphs.
 * </ul>
 */
class RealTraceHostTest {
    record Result(List<HostStep> steps, HostDrillDown drillDown, String rank) {}

    static Result analyze(Path trace) throws IOException {
        Map<String, HostTracker> trackers = new TreeMap<>();
        List<HostStep> steps = new ArrayList<>();
        KinetoReader.read(trace, ReaderOptions.defaults(), new OrderedSink() {
            @Override
            public void event(String rank, TraceBatch.Lane lane, long index, TraceEvent e) {
                trackers.computeIfAbsent(rank, r -> new HostTracker(HostConfig.defaults(), "job", "run", r))
                        .accept(lane, e, steps::add);
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {
                HostTracker t = trackers.get(rank);
                if (t != null) {
                    t.laneEnded(lane, steps::add);
                }
            }
        });
        assertThat(trackers).hasSize(1);
        HostTracker t = trackers.values().iterator().next();
        t.finish(steps::add);
        return new Result(steps, t.drillDown(), t.rank());
    }

    @Test
    void vllmFullGraphDecodeIsOneGenerationStepExtendedToItsGraph() throws IOException {
        Result r = analyze(SharedData.file("tracelens/inference/vllm_decode_full/graph_execution.json.gz"));
        assertThat(r.steps()).hasSize(1);
        HostStep s = r.steps().get(0);
        assertThat(s.source()).isEqualTo("marker");
        assertThat(s.label()).startsWith("execute_32_context_0(");
        assertThat(s.phase()).isEqualTo("generation");
        assertThat(s.stepNumber()).isNull();
        assertThat(s.startNs()).isEqualTo(6_520_618_853_487_683L);
        assertThat(s.endNs()).isEqualTo(6_520_618_872_601_742L);
        assertThat(s.sums()).isEqualTo(new HostSums(1, 19_114_059, 10_717_708, 531_667, 5, 20, 0, 0, 0, 425, 421, 9));
        assertThat(s.complete()).isTrue();
        assertThat(s.apis()).containsEntry("hipGraphLaunch", 1L).containsEntry("hipMemcpyAsync", 9L);
        assertThat(r.drillDown().graph()).isEqualTo(new HostDrillDown.GraphCoverage(425, 421, 1, 421.0 / 425));
    }

    @Test
    void sglangDecodeStepEndsWithItsGraphDespiteALaterLaunchOnAnotherStream() throws IOException {
        Result r = analyze(SharedData.file("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"));
        assertThat(r.steps()).extracting(HostStep::label).containsExactly("step[DECODE bs=32]");
        HostStep s = r.steps().get(0);
        assertThat(s.phase()).isEqualTo("generation");
        assertThat(s.startNs()).isEqualTo(4_909_914_216_408_420L);
        assertThat(s.endNs()).isEqualTo(4_909_914_689_963_940L);
        assertThat(s.sums()).isEqualTo(new HostSums(1, 473_555_520, 9_706_189, 1_633_171, 9, 24, 0, 0, 0, 553, 544, 1));
        // the 463 ms the GPU waited for the step's blocking copy: idle ratio far above the threshold
        assertThat(s.metrics().gpuIdleRatio()).isGreaterThan(0.97);
    }

    @Test
    void hfEagerProfilerStepOnH100() throws IOException {
        Result r = analyze(SharedData.file("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
        assertThat(r.steps()).hasSize(1);
        HostStep s = r.steps().get(0);
        assertThat(s.label()).isEqualTo("ProfilerStep#6");
        assertThat(s.stepNumber()).isEqualTo(6L);
        assertThat(s.phase()).isNull();
        assertThat(s.startNs()).isEqualTo(1_428_625_731_896_179L);
        assertThat(s.endNs()).isEqualTo(1_428_625_781_275_082L);
        assertThat(s.sums())
                .isEqualTo(new HostSums(1, 49_378_903, 45_382_492, 4_098_678, 1029, 1922, 0, 0, 0, 1459, 0, 240));
        assertThat(r.drillDown().graph().graphKernels()).isZero();
    }
}
