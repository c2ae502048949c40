package io.llmprof.agent.nsys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.llmprof.agent.kineto.SharedData;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * nsys stats summaries. The generated export's figures are worked out in the comments; the real exports' were
 * computed independently with python3's sqlite3 and statistics modules (GROUP BY the StringIds value of
 * demangledName, NVTX ranges of eventType 59/60 keyed by domain:name and style, memcpy by copyKind, memset; median =
 * statistics.median, StdDev = statistics.stdev; all rows of all five shared exports agreed).
 */
class NsysStatsTest {
    @TempDir
    Path tmp;

    Path fixture() throws Exception {
        Path db = tmp.resolve("stats.sqlite");
        try (NsysExportWriter w = NsysExportWriter.create(db)) {
            long t = 1_000;
            for (long d : new long[] {10, 20, 30, 40}) {
                w.kernel(1, 0, 7, t, t + d, t, "void gemm<float>(float*)", null);
                t += 100;
            }
            w.kernel(1, 0, 7, t, t + 5, t, "relu(float*)", null);
            t += 100;
            for (long d : new long[] {7, 3, 50}) {
                w.kernel(1, 0, 7, t, t + d, t, "void ns::softmax<half>(half*)", null);
                t += 100;
            }
            w.kernel(1, 0, 7, t, t - 1, t, "relu(float*)", null); // ends before it starts: left out
            w.nvtx(1, 1, 0, 100, "step", false);
            w.nvtx(1, 1, 200, 500, "step", false);
            w.nvtx(1, 1, 600, 650, "step", false, NsysExportWriter.NVTX_START_END);
            w.nvtx(1, 1, 700, 770, "prep", true);
            w.memcpy(1, 0, 8, 2_000, 2_100, 1, NsysExportWriter.COPY_HTOD, 1_000_000);
            w.memcpy(1, 0, 8, 2_200, 2_500, 2, NsysExportWriter.COPY_HTOD, 3_000_000);
            w.memcpy(1, 0, 8, 2_600, 2_650, 3, NsysExportWriter.COPY_DTOH, 500);
            w.memset(1, 0, 8, 2_700, 2_720, 4, 2_000_000);
        }
        // a named domain (eventType 75 names domainId 1) with one range, and a mark (no end) that is no range
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
                Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO NVTX_EVENTS (start, end, eventType, text, domainId) VALUES (0, NULL, 75,"
                    + " 'TensorRT', 1)");
            s.executeUpdate("INSERT INTO NVTX_EVENTS (start, end, eventType, text, domainId) VALUES (800, 830, 59,"
                    + " 'layer', 1)");
            s.executeUpdate("INSERT INTO NVTX_EVENTS (start, end, eventType, text, domainId) VALUES (900, NULL, 34,"
                    + " 'mark', 0)");
        }
        return db;
    }

    @Test
    void kernelSummaryHasNsysFiguresPerDemangledOrBaseName() throws Exception {
        NsysStats.Stats s = NsysStats.read(fixture(), NsysStats.REPORTS, false);
        NsysStats.Report k = s.report(NsysStats.KERNELS);
        // gemm 10+20+30+40 = 100, softmax 7+3+50 = 60, relu 5: 165 ns in all
        assertThat(k.rows())
                .extracting(NsysStats.Row::name)
                .containsExactly("void gemm<float>(float*)", "void ns::softmax<half>(half*)", "relu(float*)");
        NsysStats.Row gemm = k.rows().get(0);
        assertThat(gemm.count()).isEqualTo(4);
        assertThat(gemm.total()).isEqualTo(100);
        assertThat(gemm.avg()).isEqualTo(25.0);
        assertThat(gemm.median()).as("even count: mean of 20 and 30").isEqualTo(25.0);
        assertThat(gemm.min()).isEqualTo(10);
        assertThat(gemm.max()).isEqualTo(40);
        // sample stddev: sqrt((15^2 + 5^2 + 5^2 + 15^2) / 3) = sqrt(500 / 3)
        assertThat(gemm.stddev()).isCloseTo(Math.sqrt(500.0 / 3), within(1e-9));
        assertThat(gemm.pct()).isCloseTo(100.0 * 100 / 165, within(1e-9));
        NsysStats.Row softmax = k.rows().get(1);
        assertThat(softmax.median()).as("odd count: the middle value").isEqualTo(7.0);
        // mean 20: sqrt((13^2 + 17^2 + 30^2) / 2) = sqrt(679)
        assertThat(softmax.stddev()).isCloseTo(Math.sqrt(679), within(1e-9));
        NsysStats.Row relu = k.rows().get(2);
        assertThat(relu.count()).isEqualTo(1);
        assertThat(relu.stddev()).as("one instance").isZero();
        assertThat(k.invalid()).isEqualTo(1);
        assertThat(k.skipped()).isNull();

        NsysStats.Report base =
                NsysStats.read(fixture(), List.of(NsysStats.KERNELS), true).report(NsysStats.KERNELS);
        assertThat(base.rows()).extracting(NsysStats.Row::name).containsExactly("gemm", "softmax", "relu");
    }

    @Test
    void nvtxSummaryIsPerDomainNameAndStyle() throws Exception {
        NsysStats.Report n =
                NsysStats.read(fixture(), List.of(NsysStats.NVTX), false).report(NsysStats.NVTX);
        // :step PushPop 100 + 300 = 400; :prep (via textId) 70; :step StartEnd 50; TensorRT:layer 30: 550 ns
        assertThat(n.rows())
                .extracting(r -> r.name() + "/" + r.style() + "/" + r.count() + "/" + r.total())
                .containsExactly(
                        ":step/PushPop/2/400",
                        ":prep/PushPop/1/70",
                        ":step/StartEnd/1/50",
                        "TensorRT:layer/PushPop/1/30");
        NsysStats.Row step = n.rows().get(0);
        assertThat(step.median()).isEqualTo(200.0);
        assertThat(step.stddev()).isCloseTo(Math.sqrt(2 * 100.0 * 100.0), within(1e-9));
        assertThat(step.pct()).isCloseTo(100.0 * 400 / 550, within(1e-9));
        assertThat(n.invalid())
                .as("the mark is not a range; the domain row is not a range")
                .isZero();
    }

    @Test
    void memorySummariesByTimeAndBySize() throws Exception {
        NsysStats.Stats s = NsysStats.read(fixture(), List.of(NsysStats.MEM_TIME, NsysStats.MEM_SIZE), false);
        // time: HtoD 100 + 300, DtoH 50, memset 20 = 470 ns
        assertThat(s.report(NsysStats.MEM_TIME).rows())
                .extracting(r -> r.name() + "/" + r.count() + "/" + r.total())
                .containsExactly(
                        "[CUDA memcpy Host-to-Device]/2/400",
                        "[CUDA memcpy Device-to-Host]/1/50",
                        "[CUDA memset]/1/20");
        NsysStats.Row htod = s.report(NsysStats.MEM_TIME).rows().get(0);
        assertThat(htod.median()).isEqualTo(200.0);
        assertThat(htod.pct()).isCloseTo(100.0 * 400 / 470, within(1e-9));
        // size: HtoD 1,000,000 + 3,000,000 bytes, memset 2,000,000, DtoH 500
        assertThat(s.report(NsysStats.MEM_SIZE).rows())
                .extracting(r -> r.name() + "/" + r.count() + "/" + r.total())
                .containsExactly(
                        "[CUDA memcpy Host-to-Device]/2/4000000",
                        "[CUDA memset]/1/2000000",
                        "[CUDA memcpy Device-to-Host]/1/500");
        assertThat(s.report(NsysStats.MEM_SIZE).rows().get(0).stddev())
                .isCloseTo(Math.sqrt(2 * 1_000_000.0 * 1_000_000.0), within(1e-6));
    }

    @Test
    void missingTablesAreSkippedWithTheReasonAndANonDatabaseIsAnError() throws Exception {
        Path db = tmp.resolve("kernels-only.sqlite");
        try (NsysExportWriter w = NsysExportWriter.create(db)) {
            w.kernel(1, 0, 7, 0, 10, 1, "k()", null);
        }
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db);
                Statement s = c.createStatement()) {
            s.executeUpdate("DROP TABLE NVTX_EVENTS");
            s.executeUpdate("DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY");
            s.executeUpdate("DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET");
        }
        NsysStats.Stats s = NsysStats.read(db, NsysStats.REPORTS, false);
        assertThat(s.report(NsysStats.NVTX).skipped()).isEqualTo("no NVTX_EVENTS table: no NVTX data");
        assertThat(s.report(NsysStats.MEM_TIME).skipped())
                .isEqualTo("no memcpy or memset table: no CUDA memory operations");
        assertThat(s.report(NsysStats.KERNELS).rows()).hasSize(1);

        Path json = tmp.resolve("t.json");
        Files.writeString(json, "{\"traceEvents\": []}");
        assertThatThrownBy(() -> NsysStats.read(json, NsysStats.REPORTS, false))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("is not an SQLite database");
    }

    @Test
    void realExportsMatchAnIndependentComputation() throws Exception {
        // con_kernel.sqlite (nsys 2022.1): test4 x2, 1,469,365 and 9,375,734 ns
        NsysStats.Stats con =
                NsysStats.read(SharedData.file("extrap-nsight/nsys_db/con_kernel.sqlite"), NsysStats.REPORTS, false);
        NsysStats.Row test4 = con.report(NsysStats.KERNELS).rows().get(1);
        assertThat(test4.name()).isEqualTo("test4(double *, unsigned long long, unsigned long long)");
        assertThat(test4.count()).isEqualTo(2);
        assertThat(test4.total()).isEqualTo(10_845_099);
        assertThat(test4.median()).isEqualTo(5_422_549.5);
        assertThat(test4.min()).isEqualTo(1_469_365);
        assertThat(test4.max()).isEqualTo(9_375_734);
        assertThat(test4.stddev()).isCloseTo(5_590_647.1, within(0.05));
        assertThat(con.report(NsysStats.KERNELS).rows().get(0).pct()).isCloseTo(92.3, within(0.05));
        assertThat(con.report(NsysStats.NVTX).skipped()).isEqualTo("no NVTX_EVENTS table: no NVTX data");

        // memfusion report1.sqlite (nsys 2023.1): NVTX names via textId in the TensorRT domain
        NsysStats.Report trt = NsysStats.read(
                        SharedData.file("memfusion-artifact/report1.sqlite"), List.of(NsysStats.NVTX), false)
                .report(NsysStats.NVTX);
        assertThat(trt.rows()).hasSize(59);
        assertThat(trt.rows().get(0).name()).isEqualTo("TensorRT:ExecutionContext::execute");
        assertThat(trt.rows().get(0).total()).isEqualTo(6_842_603);
        assertThat(trt.rows().get(0).pct()).isCloseTo(87.6, within(0.05));

        // profile16.sqlite: 17 memsets, 37,696 ns, median 2,272, stddev 465.3; 1,024,640,000 bytes
        NsysStats.Stats p16 = NsysStats.read(
                SharedData.file("extrap-nsight/concurrent_example/concurrent.s16/profile16.sqlite"),
                List.of(NsysStats.MEM_TIME, NsysStats.MEM_SIZE),
                false);
        NsysStats.Row memset = p16.report(NsysStats.MEM_TIME).rows().get(2);
        assertThat(memset.name()).isEqualTo("[CUDA memset]");
        assertThat(memset.count()).isEqualTo(17);
        assertThat(memset.total()).isEqualTo(37_696);
        assertThat(memset.median()).isEqualTo(2_272.0);
        assertThat(memset.stddev()).isCloseTo(465.3, within(0.05));
        assertThat(p16.report(NsysStats.MEM_SIZE).rows().get(0).total()).isEqualTo(1_024_640_000L);

        // nvfuser report1.sqlite (nsys 2024.6): default-domain ranges read ":name"; 75 distinct
        NsysStats.Report fuser = NsysStats.read(
                        SharedData.file("nvfuser/report1.sqlite"), List.of(NsysStats.NVTX), false)
                .report(NsysStats.NVTX);
        assertThat(fuser.rows()).hasSize(75);
        assertThat(fuser.rows().get(0).name()).isEqualTo(":KernelExecutor::compileFusion");
        assertThat(fuser.rows().get(0).total()).isEqualTo(392_917_494);
    }
}
