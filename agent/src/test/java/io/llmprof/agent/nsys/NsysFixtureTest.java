package io.llmprof.agent.nsys;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.agent.kineto.ReadSummary;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.kineto.RecordingSink;
import io.llmprof.agent.kineto.TraceFiles;
import io.llmprof.agent.produce.TraceReaders;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch.Lane;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.TraceEvent.Kind;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Exports built by the test with JDBC (known answers), and bad input. */
class NsysFixtureTest {
    private static final long PID = 4242;
    private static final long OTHER_PID = 77;

    @TempDir
    Path dir;

    private static long globalPid(long pid) {
        return (1L << 56) | (pid << 24); // the high byte is set in real exports too
    }

    /**
     * Process 4242 with kernels on devices 0 and 1 (rows deliberately not in start order), one memcpy, one bad
     * kernel (end before start), two runtime calls (one with a _v7000 suffix) and NVTX: a push/pop range with
     * `text`, a start/end range with `textId`, a mark and a domain row without an end. With {@code second}, a
     * process 77 with one kernel and one runtime call. No memset table; metadata in META_DATA_EXPORT.
     */
    private Path fixture(String name, boolean second) throws Exception {
        Path file = dir.resolve(name);
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
            s.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)");
            s.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT NOT NULL, end INT NOT NULL,"
                    + " deviceId INT, streamId INT, correlationId INT, globalPid INT, demangledName INT,"
                    + " shortName INT)");
            s.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT, deviceId INT, streamId INT,"
                    + " correlationId INT, globalPid INT, copyKind INT, bytes INT)");
            s.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, globalTid INT,"
                    + " correlationId INT, nameId INT)");
            s.execute("CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, textId INT,"
                    + " globalTid INT)");
            s.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2024.6.2.25')");
            s.execute("INSERT INTO StringIds VALUES (1, 'gemm_dev0'), (2, 'relu'), (3, 'gemm_dev1'),"
                    + " (4, 'early_dev1'), (5, 'cudaLaunchKernel_v7000'), (6, 'cudaLaunchKernel'),"
                    + " (7, 'forward'), (8, 'other_process_kernel')");
            long g = globalPid(PID);
            long t = g | 4250;
            try (PreparedStatement k =
                    c.prepareStatement("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?)")) {
                Object[][] rows = {
                    {300, 350, 0, 7, 3, g, null, 2},
                    {150, 250, 1, 9, 2, g, 3, 3},
                    {100, 200, 0, 7, 1, g, 1, 1},
                    {120, 130, 1, 9, 4, g, 4, 4},
                    {500, 400, 0, 7, 5, g, 1, 1},
                };
                for (Object[] row : rows) {
                    for (int i = 0; i < row.length; i++) {
                        k.setObject(i + 1, row[i]);
                    }
                    k.executeUpdate();
                }
            }
            s.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (250, 260, 0, 7, 6, " + g + ", 1, 4096)");
            s.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (140, 145, " + t + ", 2, 6)," + " (90, 95, " + t
                    + ", 1, 5)");
            s.execute("INSERT INTO NVTX_EVENTS VALUES (80, 400, 59, 'step[DECODE bs=4]', NULL, " + t + "),"
                    + " (85, 390, 60, NULL, 7, " + t + "), (87, NULL, 34, 'mark', NULL, " + t + "),"
                    + " (0, NULL, 75, 'domain', NULL, " + t + ")");
            if (second) {
                long o = globalPid(OTHER_PID);
                s.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (110, 120, 0, 3, 1, " + o + ", 8, 8)");
                s.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (105, 108, " + (o | 78) + ", 1, 6)");
            }
        }
        return file;
    }

    private static List<String> names(RecordingSink sink, String rank, Lane lane) {
        return sink.names(rank, lane);
    }

    @Test
    void twoDevicesOfOneProcessAreTwoRanksInStartOrder() throws Exception {
        Path file = fixture("fixture.sqlite", false);
        RecordingSink sink = new RecordingSink();
        ReadSummary summary = NsysReader.read(file, ReaderOptions.defaults(), sink);

        assertThat(summary.ranks()).containsExactly("pid4242", "pid4242.dev1");
        assertThat(summary.kernels()).isEqualTo(4);
        assertThat(summary.eventsRead()).isEqualTo(4 + 1 + 2 + 2);
        assertThat(summary.skipped()).as("NVTX mark and domain rows").isEqualTo(2);
        assertThat(summary.complete()).isTrue();
        assertThat(names(sink, "pid4242", Lane.GPU)).containsExactly("gemm_dev0", "Memcpy HtoD", "relu");
        assertThat(names(sink, "pid4242.dev1", Lane.GPU)).containsExactly("early_dev1", "gemm_dev1");
        assertThat(names(sink, "pid4242", Lane.HOST))
                .containsExactly("step[DECODE bs=4]", "forward", "cudaLaunchKernel", "cudaLaunchKernel");
        assertThat(names(sink, "pid4242.dev1", Lane.HOST)).isEmpty();
        assertThat(sink.ends).containsExactlyInAnyOrder("pid4242/HOST", "pid4242/GPU", "pid4242.dev1/GPU");

        TraceEvent gemm = sink.lane("pid4242.dev1", Lane.GPU).get(1);
        assertThat(gemm).isEqualTo(new TraceEvent(Kind.KERNEL, "gemm_dev1", 150, 100, 1, 9L, 2L, null, null));
        TraceEvent launch = sink.lane("pid4242", Lane.HOST).get(2);
        assertThat(launch)
                .isEqualTo(new TraceEvent(Kind.RUNTIME, "cudaLaunchKernel", 90, 5, null, 4250L, 1L, null, null));
        TraceEvent step = sink.lane("pid4242", Lane.HOST).get(0);
        assertThat(step.kind()).isEqualTo(Kind.USER_ANNOTATION);
        assertThat(step.durNs()).isEqualTo(320);

        // The kernel that ends before it starts is reported with the table and file, not delivered.
        assertThat(summary.problems()).singleElement().satisfies(p -> {
            assertThat(p.kind()).isEqualTo(AnomalyKind.NEGATIVE_DURATION);
            assertThat(p.file()).isEqualTo(file.toString());
            assertThat(p.message())
                    .contains("1 rows of CUPTI_ACTIVITY_KIND_KERNEL")
                    .contains(file.toString());
        });
        assertThat(sink.problems).hasSize(1);
        assertThat(NsysReader.metadata(file)).containsEntry("EXPORT_PRODUCT_VERSION", "2024.6.2.25");
    }

    @Test
    void severalProcessesAreNamedByPidAfterTheFileRank() throws Exception {
        Path file = fixture("rank3.sqlite", true);
        RecordingSink sink = new RecordingSink();
        ReadSummary summary = NsysReader.read(file, ReaderOptions.defaults(), sink);

        assertThat(summary.ranks()).containsExactly("3.pid4242", "3.pid4242.dev1", "3.pid77");
        assertThat(names(sink, "3.pid77", Lane.GPU)).containsExactly("other_process_kernel");
        assertThat(sink.lane("3.pid77", Lane.HOST)).singleElement().satisfies(e -> assertThat(e.stream())
                .isEqualTo(78L));
        assertThat(names(sink, "3.pid4242", Lane.GPU)).containsExactly("gemm_dev0", "Memcpy HtoD", "relu");

        RecordingSink single = new RecordingSink();
        assertThat(NsysReader.read(fixture("rank5.sqlite", false), ReaderOptions.defaults(), single)
                        .ranks())
                .containsExactly("5", "5.dev1");
    }

    @Test
    void notSqliteIsAProblemNamingTheFile() throws Exception {
        Path file = dir.resolve("broken.sqlite");
        Files.writeString(file, "{\"traceEvents\": []}");
        RecordingSink sink = new RecordingSink();
        ReadSummary summary = NsysReader.read(file, ReaderOptions.defaults(), sink);

        assertThat(summary.eventsRead()).isZero();
        assertThat(summary.complete()).isFalse();
        assertThat(sink.problems).singleElement().satisfies(p -> {
            assertThat(p.kind()).isEqualTo(AnomalyKind.INVALID_INPUT);
            assertThat(p.file()).isEqualTo(file.toString());
            assertThat(p.message()).contains("not an SQLite database").contains("broken.sqlite");
        });
    }

    @Test
    void corruptDatabaseIsAProblemNotAnException() throws Exception {
        Path file = dir.resolve("corrupt.sqlite");
        byte[] bytes = new byte[8192];
        System.arraycopy("SQLite format 3\0".getBytes(StandardCharsets.US_ASCII), 0, bytes, 0, 16);
        for (int i = 16; i < bytes.length; i++) {
            bytes[i] = (byte) (i * 31);
        }
        Files.write(file, bytes);
        RecordingSink sink = new RecordingSink();
        ReadSummary summary = NsysReader.read(file, ReaderOptions.defaults(), sink);

        assertThat(summary.complete()).isFalse();
        assertThat(summary.eventsRead()).isZero();
        assertThat(sink.problems).isNotEmpty().allSatisfy(p -> assertThat(p.message())
                .contains("corrupt.sqlite"));
        assertThat(NsysReader.isCompleteDatabase(file)).isFalse();
    }

    @Test
    void databaseWithoutKernelTableIsNoKernels() throws Exception {
        Path file = dir.resolve("cpu_only.sqlite");
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + file);
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
            s.execute("CREATE TABLE OSRT_API (start INT, end INT, globalTid INT, nameId INT)");
        }
        RecordingSink sink = new RecordingSink();
        ReadSummary summary = NsysReader.read(file, ReaderOptions.defaults(), sink);

        assertThat(summary.eventsRead()).isZero();
        assertThat(summary.problems()).singleElement().satisfies(p -> {
            assertThat(p.kind()).isEqualTo(AnomalyKind.NO_KERNELS);
            assertThat(p.message())
                    .contains("no CUPTI_ACTIVITY_KIND_KERNEL table")
                    .contains("cpu_only.sqlite");
        });
        assertThat(sink.ends).containsExactlyInAnyOrder("unknown/HOST", "unknown/GPU");
    }

    @Test
    void nsysReportIsRefusedWithTheExportCommand() throws Exception {
        Path file = dir.resolve("profile.nsys-rep");
        Files.write(file, new byte[] {1, 2, 3, 4});
        RecordingSink sink = new RecordingSink();
        ReadSummary summary = TraceReaders.read(file, ReaderOptions.defaults(), sink);

        assertThat(summary.eventsRead()).isZero();
        assertThat(sink.problems)
                .singleElement()
                .extracting(InputProblem::message)
                .asString()
                .contains("not supported")
                .contains("nsys export --type sqlite profile.nsys-rep");
        assertThat(sink.problems).extracting(InputProblem::kind).containsExactly(AnomalyKind.INVALID_INPUT);
        assertThat(TraceFiles.isTraceFileName("profile.nsys-rep")).isFalse();
    }

    @Test
    void dispatchAndFileNames() throws Exception {
        Path file = fixture("run3_rank0.sqlite", false);
        RecordingSink sink = new RecordingSink();
        assertThat(TraceReaders.read(file, ReaderOptions.defaults(), sink).kernels())
                .isEqualTo(4);
        assertThat(TraceFiles.isTraceFileName("run3_rank0.sqlite")).isTrue();
        assertThat(TraceFiles.runName(file)).isEqualTo("run3");
        assertThat(TraceFiles.expand(List.of(dir))).containsExactly(file);
    }

    @Test
    void aDatabaseBeingWrittenIsNotComplete() throws Exception {
        Path file = fixture("live.sqlite", false);
        assertThat(TraceReaders.isComplete(file)).isTrue();
        Path journal = dir.resolve("live.sqlite-journal");
        Files.write(journal, new byte[] {0});
        assertThat(TraceReaders.isComplete(file)).isFalse();
        Files.delete(journal);
        Path half = dir.resolve("half.sqlite");
        Files.write(half, java.util.Arrays.copyOf(Files.readAllBytes(file), 100));
        assertThat(TraceReaders.isComplete(half)).isFalse();
    }
}
