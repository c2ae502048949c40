package io.llmprof.agent.nsys;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.RecordingSink;
import io.llmprof.agent.kineto.SharedData;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every Nsight Systems export in ../shared/data. Expected numbers were counted by hand with python's sqlite3
 * module: per table {@code SELECT (globalPid>>24)&16777215, deviceId, count(*) ... GROUP BY 1,2} (runtime and
 * NVTX by {@code (globalTid>>24)&16777215}; NVTX only {@code eventType IN (59,60)} rows with an end), names
 * through {@code StringIds}, order by {@code ORDER BY start}. Each file holds one process and one device, so
 * its single rank is {@code pid<P>}.
 */
class NsysRealExportsTest {
    private static final String CON_KERNEL = "extrap-nsight/nsys_db/con_kernel.sqlite";
    private static final String PROFILE16 = "extrap-nsight/concurrent_example/concurrent.s16/profile16.sqlite";
    private static final String EX_GPU = "extrap-nsight/sampled_callchains/ex-gpu.s1000/ex-gpu.s1000.sqlite";
    private static final String MEMFUSION = "memfusion-artifact/report1.sqlite";
    private static final String NVFUSER = "nvfuser/report1.sqlite";

    private static RecordingSink read(String relative, ReadSummary[] summary) throws Exception {
        Path file = SharedData.file(relative);
        RecordingSink sink = new RecordingSink();
        summary[0] = NsysReader.read(file, ReaderOptions.defaults(), sink);
        return sink;
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        // file, rank, kernels, memcpy, memset, runtime, nvtx ranges, NVTX rows that are not ranges
        CON_KERNEL + ", pid32084, 9, 11, 1, 71, 0, 0",
        PROFILE16 + ", pid24620, 12, 30, 17, 184, 76, 1",
        // ex-gpu: 36 runtime rows, 18 correlation ids; each versioned row lies inside its unversioned twin on the
        // same thread (python: start later, end earlier, same correlationId): 18 calls are sent
        EX_GPU + ", pid869498, 6, 0, 0, 18, 0, 0",
        MEMFUSION + ", pid24129, 36, 4, 0, 5668, 59, 1",
        NVFUSER + ", pid30156, 19, 1, 1, 968, 652, 0",
    })
    void countsPerRankAndKind(
            String relative, String rank, long kernels, long memcpy, long memset, long runtime, long nvtx, long skipped)
            throws Exception {
        ReadSummary[] summary = new ReadSummary[1];
        RecordingSink sink = read(relative, summary);

        assertThat(summary[0].ranks()).containsExactly(rank);
        assertThat(summary[0].problems()).isEmpty();
        assertThat(summary[0].complete()).isTrue();
        assertThat(summary[0].kernels()).isEqualTo(kernels);
        assertThat(summary[0].skipped()).isEqualTo(skipped);
        long total = kernels + memcpy + memset + runtime + nvtx;
        assertThat(summary[0].eventsRead()).isEqualTo(total);
        assertThat(sink.events).hasSize((int) total);

        Map<Kind, Long> gpu = count(sink.lane(rank, Lane.GPU));
        Map<Kind, Long> host = count(sink.lane(rank, Lane.HOST));
        assertThat(gpu.getOrDefault(Kind.KERNEL, 0L)).isEqualTo(kernels);
        assertThat(gpu.getOrDefault(Kind.MEMCPY, 0L)).isEqualTo(memcpy);
        assertThat(gpu.getOrDefault(Kind.MEMSET, 0L)).isEqualTo(memset);
        assertThat(gpu.keySet()).allMatch(Kind::isGpuActivity);
        assertThat(host.getOrDefault(Kind.RUNTIME, 0L)).isEqualTo(runtime);
        assertThat(host.getOrDefault(Kind.USER_ANNOTATION, 0L)).isEqualTo(nvtx);
        assertThat(host.keySet()).containsAnyOf(Kind.RUNTIME).doesNotContain(Kind.KERNEL);

        // Both lanes end, and each is in start order (RecordingSink already checks indexes 0, 1, 2, ...).
        assertThat(sink.ends).containsExactlyInAnyOrder(rank + "/HOST", rank + "/GPU");
        for (Lane lane : Lane.values()) {
            List<TraceEvent> events = sink.lane(rank, lane);
            for (int i = 1; i < events.size(); i++) {
                assertThat(events.get(i).startNs())
                        .as("%s %s event %d", rank, lane, i)
                        .isGreaterThanOrEqualTo(events.get(i - 1).startNs());
            }
        }
        assertThat(sink.lane(rank, Lane.GPU)).allMatch(e -> e.device() != null && e.device() == 0);
        assertThat(sink.lane(rank, Lane.HOST))
                .filteredOn(e -> e.kind() == Kind.RUNTIME)
                // Suffixes are CUDA versions (_v3020, _v7000, _v12000); a name's own _v2 stays (one suffix is
                // stripped).
                .allMatch(e -> !e.name().matches(".*_v\\d{4,}$") && e.correlation() != null);
    }

    private static Map<Kind, Long> count(List<TraceEvent> events) {
        return events.stream().collect(Collectors.groupingBy(TraceEvent::kind, Collectors.counting()));
    }

    @Test
    void runtimeNamesLoseTheirVersionSuffix() throws Exception {
        // ex-gpu.s1000 holds each call twice, once as e.g. cudaLaunchKernel and once, nested inside it with the same
        // correlation id, as cudaLaunchKernel_v7000: one call each is sent, under the stripped name.
        RecordingSink sink = read(EX_GPU, new ReadSummary[1]);
        Map<String, Long> byName = sink.lane("pid869498", Lane.HOST).stream()
                .collect(Collectors.groupingBy(TraceEvent::name, Collectors.counting()));
        assertThat(byName)
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "cudaDeviceSynchronize", 7L, "cudaLaunchKernel", 6L, "cudaMalloc", 4L, "cudaMemcpy", 1L));
        assertThat(NsysReader.stripVersion("cudaGetDeviceProperties_v2_v12000"))
                .isEqualTo("cudaGetDeviceProperties_v2");
        // the API's own _v2 is another entry point (cuGetProcAddress_v2 takes a flags argument): it stays
        assertThat(NsysReader.stripVersion("cuGetProcAddress_v2")).isEqualTo("cuGetProcAddress_v2");
        assertThat(NsysReader.stripVersion("cudaMemcpy_v3020")).isEqualTo("cudaMemcpy");
    }

    @Test
    void kernelNamesAreDemangledNames() throws Exception {
        RecordingSink sink = read(CON_KERNEL, new ReadSummary[1]);
        TraceEvent first = sink.lane("pid32084", Lane.GPU).stream()
                .filter(e -> e.kind() == Kind.KERNEL)
                .findFirst()
                .orElseThrow();
        assertThat(first.kind()).isEqualTo(Kind.KERNEL);
        assertThat(first.name()).isEqualTo("test0(double *, unsigned long long, unsigned long long)");
        assertThat(first.startNs()).isEqualTo(529_596_644L);
        assertThat(first.stream()).isNotNull();
    }

    @Test
    void latin1MetadataReadsWithoutError() throws Exception {
        Map<String, String> meta = NsysReader.metadata(SharedData.file(CON_KERNEL));
        // EXPORT_USER is 'Alexander Gei' followed by the single byte 0xE1: not UTF-8, read as Latin-1.
        assertThat(meta).containsEntry("EXPORT_USER", "Alexander Gei\u00e1");
        assertThat(meta).containsEntry("EXPORT_PRODUCT_VERSION", "2022.1.1.61");
        assertThat(NsysReader.metadata(SharedData.file(NVFUSER)))
                .containsEntry("EXPORT_PRODUCT_VERSION", "2024.6.2.25");
        assertThat(NsysReader.metadata(SharedData.file(EX_GPU))).isEmpty();
    }

    @Test
    void nvtxNamesFromTextAndFromTextId() throws Exception {
        // profile16 and nvfuser store NVTX names in `text`; memfusion's report1 only through `textId`.
        Function<String, List<String>> firstNames = relative -> {
            try {
                ReadSummary[] s = new ReadSummary[1];
                RecordingSink sink = read(relative, s);
                String rank = s[0].ranks().iterator().next();
                return sink.lane(rank, Lane.HOST).stream()
                        .filter(e -> e.kind() == Kind.USER_ANNOTATION)
                        .map(TraceEvent::name)
                        .limit(2)
                        .toList();
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        };
        assertThat(firstNames.apply(PROFILE16)).containsExactly("main", "main->test_max_par");
        assertThat(firstNames.apply(NVFUSER)).containsExactly("Fusion::resetTvUses", "getTerminatingOutputs");
        assertThat(firstNames.apply(MEMFUSION)).containsExactly("ExecutionContext::execute", "onnx::Conv_239");
    }
}
