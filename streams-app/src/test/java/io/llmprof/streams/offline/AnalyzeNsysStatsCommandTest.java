package io.llmprof.streams.offline;

import static io.llmprof.streams.offline.AnalyzeLayersCommandTest.analyze;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.nsys.NsysExportWriter;
import io.llmprof.streams.offline.AnalyzeLayersCommandTest.Out;
import io.llmprof.streams.support.SharedData;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `analyze nsys-stats`: nsys stats' columns in text and JSON, and the exit codes. The generated export's figures are
 * worked out in the comments (NsysStatsTest checks the aggregation itself, on real exports too).
 */
class AnalyzeNsysStatsCommandTest {
    @TempDir
    Path tmp;

    Path export() throws Exception {
        Path db = tmp.resolve("run.sqlite");
        try (NsysExportWriter w = NsysExportWriter.create(db)) {
            long t = 0;
            for (long d : new long[] {10, 20, 30, 40}) { // total 100, avg = med 25, stddev sqrt(500/3) = 12.9
                w.kernel(1, 0, 7, t, t + d, t, "void gemm<float>(float*)", null);
                t += 100;
            }
            for (long d : new long[] {7, 3, 50}) { // total 60, med 7, stddev sqrt(679) = 26.1
                w.kernel(1, 0, 7, t, t + d, t, "softmax(half*)", null);
                t += 100;
            }
            w.nvtx(1, 1, 0, 1_000, "_forward_step", false);
            w.memcpy(1, 0, 8, 2_000, 2_100, 1, NsysExportWriter.COPY_HTOD, 1_500_000);
        }
        return db;
    }

    @Test
    void textHasNsysTitlesColumnsAndRows() throws Exception {
        Out o = analyze("nsys-stats", export().toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out())
                .contains(" ** NVTX Range Summary (nvtx_sum):")
                .contains(" ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):")
                .contains(" ** CUDA GPU MemOps Summary (by Time) (cuda_gpu_mem_time_sum):")
                .contains(" ** CUDA GPU MemOps Summary (by Size) (cuda_gpu_mem_size_sum):")
                .containsPattern(
                        " Time \\(%\\) +Total Time \\(ns\\) +Instances +Avg \\(ns\\) +Med \\(ns\\) +Min \\(ns\\) +Max"
                                + " \\(ns\\) +StdDev \\(ns\\) +Name\\n")
                // 100 of 160 ns = 62.5%, 60 = 37.5%
                .containsPattern(
                        "\\n +62\\.5 +100 +4 +25\\.0 +25\\.0 +10 +40 +12\\.9  void gemm<float>\\(float\\*\\)\\n")
                .containsPattern("\\n +37\\.5 +60 +3 +20\\.0 +7\\.0 +3 +50 +26\\.1  softmax\\(half\\*\\)\\n")
                .containsPattern(
                        "\\n +100\\.0 +1,000 +1 +1,000\\.0 +1,000\\.0 +1,000 +1,000 +0\\.0  PushPop  :_forward_step\\n")
                .containsPattern(
                        "\\n +1\\.500 +1 +1\\.500 +1\\.500 +1\\.500 +1\\.500 +0\\.000  \\[CUDA memcpy Host-to-Device\\]\\n");
    }

    @Test
    void jsonHasOneObjectPerReportWithNsysColumnsAsFields() throws Exception {
        Out o = analyze(
                "nsys-stats",
                export().toString(),
                "--format",
                "json",
                "--base",
                "--report",
                "cuda_gpu_kern_sum,cuda_gpu_mem_size_sum");
        assertThat(o.code()).as(o.err()).isZero();
        JsonNode doc = AnalyzeKernelsCommandTest.json(o);
        assertThat(doc.get("kernel_names").asText()).isEqualTo("base");
        assertThat(doc.get("reports"))
                .extracting(r -> r.get("report").asText())
                .containsExactly("cuda_gpu_kern_sum", "cuda_gpu_mem_size_sum");
        JsonNode gemm = doc.at("/reports/0/rows/0");
        assertThat(gemm.fieldNames())
                .toIterable()
                .containsExactly(
                        "time_pct",
                        "total_ns",
                        "instances",
                        "avg_ns",
                        "med_ns",
                        "min_ns",
                        "max_ns",
                        "stddev_ns",
                        "name");
        assertThat(gemm.get("time_pct").decimalValue()).isEqualByComparingTo("62.5");
        assertThat(gemm.get("total_ns").asLong()).isEqualTo(100);
        assertThat(gemm.get("instances").asLong()).isEqualTo(4);
        assertThat(gemm.get("med_ns").decimalValue()).isEqualByComparingTo("25.0");
        assertThat(gemm.get("stddev_ns").decimalValue()).isEqualByComparingTo("12.9");
        assertThat(gemm.get("name").asText()).as("--base: the short name").isEqualTo("gemm");
        JsonNode size = doc.at("/reports/1/rows/0");
        assertThat(size.fieldNames())
                .toIterable()
                .containsExactly(
                        "total_mb",
                        "total_bytes",
                        "count",
                        "avg_mb",
                        "med_mb",
                        "min_mb",
                        "max_mb",
                        "stddev_mb",
                        "operation");
        assertThat(size.get("total_mb").decimalValue()).isEqualByComparingTo("1.500");
        assertThat(size.get("total_bytes").asLong()).isEqualTo(1_500_000);
        assertThat(doc.at("/reports/1/skipped").isNull()).isTrue();
    }

    @Test
    void realExportWithoutNvtxSaysItSkipsIt() {
        Out o = analyze(
                "nsys-stats",
                SharedData.file("extrap-nsight/nsys_db/con_kernel.sqlite").toString());
        assertThat(o.code()).isZero();
        assertThat(o.out())
                .contains("SKIPPED: ")
                .contains("no NVTX_EVENTS table: no NVTX data.")
                // python3 sqlite3: test2 is 250,891,246 of the 271,711,594 kernel ns
                .containsPattern("\\n +92\\.3 +250,891,246 +1 +250,891,246\\.0 ");
    }

    @Test
    void badInputIsAUsageErrorOrNoData() throws Exception {
        Path rep = tmp.resolve("run.nsys-rep");
        Files.writeString(rep, "x");
        Out o = analyze("nsys-stats", rep.toString());
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).contains("export it first with nsys export --type sqlite");
        Path json = tmp.resolve("t.json");
        Files.writeString(json, "{}");
        assertThat(analyze("nsys-stats", json.toString()).err()).contains("is not an SQLite database");
        assertThat(analyze("nsys-stats", tmp.resolve("missing.sqlite").toString())
                        .code())
                .isEqualTo(2);
        Out unknown = analyze("nsys-stats", export().toString(), "--report", "cuda_api_sum");
        assertThat(unknown.code()).isEqualTo(2);
        assertThat(unknown.err()).contains("unknown report cuda_api_sum");
        Path empty = tmp.resolve("empty.sqlite");
        try (NsysExportWriter w = NsysExportWriter.create(empty)) {
            w.runtime(1, 1, 0, 10, 1, "cudaFree_v3020");
        }
        Out none = analyze("nsys-stats", empty.toString());
        assertThat(none.code()).isEqualTo(4);
        assertThat(none.err()).contains("has no kernel, NVTX range, memcpy or memset rows");
    }
}
