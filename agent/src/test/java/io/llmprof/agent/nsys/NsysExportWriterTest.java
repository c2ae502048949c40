package io.llmprof.agent.nsys;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.RecordingSink;
import io.llmprof.agent.kineto.SharedData;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NsysExportWriterTest {
    @TempDir
    Path dir;

    @Test
    void theExportAppearsOnlyWhenClosed() throws Exception {
        Path file = dir.resolve("live.sqlite");
        Path temp = dir.resolve(".live.sqlite.tmp");
        try (NsysExportWriter w = NsysExportWriter.create(file)) {
            w.kernel(1, 0, 7, 100, 200, 1, "void ns::k<int>(float*)", null);
            assertThat(file).doesNotExist();
            assertThat(temp).exists();
            assertThat(TraceFiles.isTraceFileName(temp.getFileName().toString()))
                    .isFalse();
            assertThat(dir.resolve(".live.sqlite.tmp-journal")).doesNotExist();
        }
        assertThat(temp).doesNotExist();
        assertThat(NsysReader.isCompleteDatabase(file)).isTrue();

        Path dropped = dir.resolve("dropped.sqlite");
        try (NsysExportWriter w = NsysExportWriter.create(dropped)) {
            w.kernel(1, 0, 7, 100, 200, 1, "k", null);
            w.discard();
        }
        assertThat(dropped).doesNotExist();
        assertThat(dir.resolve(".dropped.sqlite.tmp")).doesNotExist();
    }

    @Test
    void rowsReadBackThroughTheReaderAsWritten() throws Exception {
        Path file = dir.resolve("rows.sqlite");
        try (NsysExportWriter w = NsysExportWriter.create(file)) {
            w.process(4242, "python3");
            w.gpu(0, "NVIDIA H100 80GB HBM3");
            w.runtime(4242, 4242, 90, 95, 1, "cudaLaunchKernel_v7000");
            w.kernel(4242, 0, 7, 100, 200, 1, "void ns::gemm<float>(float const*)", 5L, 100_001L);
            w.runtime(4242, 4250, 96, 98, 2, "cudaMemcpyAsync_v3020");
            w.memcpy(4242, 0, 7, 210, 220, 2, NsysExportWriter.COPY_DTOH, 64);
            w.memset(4242, 0, 7, 230, 240, 3, 1024);
            w.nvtx(4242, 4242, 80, 300, "step", false);
            w.nvtx(4242, 4250, 85, 290, "prep", true, NsysExportWriter.NVTX_START_END);
            // Rows are written as given: an end before the start reaches the reader, which reports it.
            w.kernel(4242, 0, 7, 500, 400, 4, "bad", null);
            w.metadata("EXPORT_PARAM_INPUT_FILE", "run.nsys-rep");
        }
        RecordingSink sink = new RecordingSink();
        ReadSummary summary = NsysReader.read(file, ReaderOptions.defaults(), sink);
        assertThat(summary.ranks()).containsExactly("pid4242");
        assertThat(sink.lane("pid4242", Lane.GPU))
                .containsExactly(
                        new TraceEvent(
                                Kind.KERNEL, "void ns::gemm<float>(float const*)", 100, 100, 0, 7L, 1L, null, null, 5L),
                        new TraceEvent(Kind.MEMCPY, "Memcpy DtoH", 210, 10, 0, 7L, 2L, null, null),
                        new TraceEvent(Kind.MEMSET, "Memset", 230, 10, 0, 7L, 3L, null, null));
        assertThat(sink.lane("pid4242", Lane.HOST))
                .containsExactly(
                        new TraceEvent(Kind.USER_ANNOTATION, "step", 80, 220, null, 4242L, null, null, null),
                        new TraceEvent(Kind.USER_ANNOTATION, "prep", 85, 205, null, 4250L, null, null, null),
                        new TraceEvent(Kind.RUNTIME, "cudaLaunchKernel", 90, 5, null, 4242L, 1L, null, null),
                        new TraceEvent(Kind.RUNTIME, "cudaMemcpyAsync", 96, 2, null, 4250L, 2L, null, null));
        assertThat(summary.problems()).singleElement().satisfies(p -> assertThat(p.kind())
                .isEqualTo(AnomalyKind.NEGATIVE_DURATION));
        assertThat(NsysReader.metadata(file))
                .containsEntry("EXPORT_PARAM_INPUT_FILE", "run.nsys-rep")
                .containsEntry("EXPORT_SCHEMA_VERSION", "3.16.1");
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
                Statement s = c.createStatement()) {
            ResultSet rs = s.executeQuery("SELECT k.globalPid, sn.value, k.graphNodeId, k.contextId"
                    + " FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds sn ON sn.id = k.shortName ORDER BY start");
            rs.next();
            assertThat(rs.getLong(1)).isEqualTo((1L << 48) | (4242L << 24));
            assertThat(rs.getString(2)).isEqualTo("gemm");
            assertThat(rs.getLong(3)).isEqualTo(100_001L);
            assertThat(rs.getLong(4)).isEqualTo(1);
            rs = s.executeQuery("SELECT rangeId, endGlobalTid, eventType FROM NVTX_EVENTS WHERE textId IS NOT NULL");
            rs.next();
            assertThat(rs.getLong(1)).isEqualTo(1);
            assertThat(rs.getLong(2)).isEqualTo(NsysExportWriter.globalTid(4242, 4250));
            assertThat(rs.getInt(3)).isEqualTo(60);
            rs = s.executeQuery("SELECT name FROM TARGET_INFO_GPU WHERE id = 0");
            rs.next();
            assertThat(rs.getString(1)).isEqualTo("NVIDIA H100 80GB HBM3");
        }
    }

    @Test
    void shortNamesAsNsysDerivesThem() {
        assertThat(NsysExportWriter.shortName("void tensorrt_llm::kernels::generalRmsNorm<__nv_bfloat16>(P)"))
                .isEqualTo("generalRmsNorm");
        assertThat(NsysExportWriter.shortName("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage)"))
                .isEqualTo("ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
        assertThat(NsysExportWriter.shortName("sm90_xmma_gemm_bf16")).isEqualTo("sm90_xmma_gemm_bf16");
    }

    /**
     * The tables we write have the columns, types and NOT NULL flags of a real nsys 2024.6 export, in order; the
     * kernel table has one extra column at the end, graphId.
     */
    @Test
    void schemaMatchesARealNsys2024Export() throws Exception {
        Path real = SharedData.file("nvfuser/report1.sqlite");
        Path ours = dir.resolve("ours.sqlite");
        try (NsysExportWriter w = NsysExportWriter.create(ours)) {
            w.gpu(0, "x");
        }
        for (String table : List.of(
                "StringIds",
                "META_DATA_EXPORT",
                "TARGET_INFO_SESSION_START_TIME",
                "PROCESSES",
                "ThreadNames",
                "TARGET_INFO_GPU",
                "CUPTI_ACTIVITY_KIND_RUNTIME",
                "NVTX_EVENTS",
                "CUPTI_ACTIVITY_KIND_KERNEL",
                "CUPTI_ACTIVITY_KIND_MEMSET",
                "CUPTI_ACTIVITY_KIND_MEMCPY")) {
            List<String> want = columns(real, table);
            if (table.equals("CUPTI_ACTIVITY_KIND_KERNEL")) {
                want = new ArrayList<>(want);
                want.add("graphId INTEGER 0");
            }
            assertThat(columns(ours, table)).as(table).isEqualTo(want);
        }
    }

    private static List<String> columns(Path file, String table) throws Exception {
        List<String> out = new ArrayList<>();
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("PRAGMA table_info(" + table + ")")) {
            while (rs.next()) {
                out.add(rs.getString("name") + " " + rs.getString("type") + " " + rs.getInt("notnull"));
            }
        }
        return out;
    }

    @Test
    void truthFilesAreNotTraceFiles() throws Exception {
        NsysFixtures.trtllmSteps(dir);
        assertThat(TraceFiles.isTraceFileName("trtllm_steps.sqlite.truth.json")).isFalse();
        assertThat(TraceFiles.isTraceFileName("run.json")).isTrue();
        assertThat(TraceFiles.expand(List.of(dir))).containsExactly(dir.resolve("trtllm_steps.sqlite"));
        assertThat(Files.exists(dir.resolve("trtllm_steps.sqlite.truth.json"))).isTrue();
    }
}
