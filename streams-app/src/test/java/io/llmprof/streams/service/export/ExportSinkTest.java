package io.llmprof.streams.service.export;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hand-built records through {@link ExportSink}: every CSV header and row checked exactly, units converted (ns
 * to ms with up to 6 exact decimals, epoch ns to msServiceProfiler's datetime text in UTC), profiler.db tables
 * read back with sqlite-jdbc, and both charts decoded.
 */
class ExportSinkTest {
    /** 2024-10-03 07:28:10.718339 UTC, the first httpReq of the real MindIE trace, in ns. */
    static final long T0 = 1_727_940_490_718_339_000L;

    static final String J = "job";
    static final String I = "inst";
    static final String KEY = "job/inst";

    @TempDir
    static Path dir;

    static ExportSink sink;

    @BeforeAll
    static void export() throws Exception {
        sink = new ExportSink(dir);
        // finished: ttft 25.5 ms, e2e 1025.5 ms, 101 output tokens -> tpot (1025.5 - 25.5) / 100 = 10 ms
        sink.request(new RequestRecord(
                J,
                I,
                "7",
                List.of("7-abcdef12"),
                RequestRecord.FINISHED,
                "stop",
                "0",
                T0,
                T0 + 25_500_000L,
                T0 + 1_025_500_000L,
                25_500_000L,
                10_000_000.0,
                1_025_500_000L,
                1_234_567L,
                1,
                4L,
                101L,
                101,
                null,
                0.25,
                T0 + 1_025_500_000L));
        // never finished: no first token, no end; re-queued twice
        sink.request(new RequestRecord(
                J,
                I,
                "8",
                List.of(),
                RequestRecord.TIMED_OUT,
                "timeout",
                null,
                T0 + 1_000L,
                null,
                null,
                null,
                null,
                null,
                2_000_000L,
                2,
                16L,
                null,
                0,
                null,
                null,
                T0 + 5_000L));
        sink.batch(new BatchRecord(
                J,
                I,
                "BatchSchedule",
                BatchRecord.SCHEDULE,
                253317L,
                "1",
                T0,
                123_456L,
                "decode",
                2,
                0,
                2,
                2L,
                1978L,
                0.0115,
                List.of("1", "2")));
        sink.batch(new BatchRecord(
                J,
                I,
                "modelExec",
                BatchRecord.EXECUTE,
                253317L,
                null,
                T0 + 200_000L,
                25_000_000L,
                "mixed",
                3,
                1,
                2,
                130L,
                null,
                null,
                List.of("1", "2", "3")));
        // two forwards of pid 1: bubble = 10.5 - 10 = 0.5 ms; the second is the last (no bubble)
        sink.forward(new ForwardRecord(J, I, 1L, "0", 0, T0 + 1_000_000L, 10_000_000L, 500_000L, "prefill", 1, false));
        sink.forward(new ForwardRecord(J, I, 1L, "0", 1, T0 + 11_500_000L, 9_000_000L, null, "decode", 1, true));
        // free 100 -> 90 (10 allocated) -> 95 (5 freed)
        sink.kvCache(new KvCacheRecord(J, I, null, T0, "Allocate", "7", 120L, 20L, 100L, 20 / 120.0, 1, 0));
        sink.kvCache(new KvCacheRecord(J, I, null, T0 + 1_000L, "AppendSlot", "7", 120L, 30L, 90L, 0.25, 1, 0));
        sink.kvCache(new KvCacheRecord(J, I, null, T0 + 2_000L, "Free", "7", 120L, 25L, 95L, 25 / 120.0, 1, 1));
        sink.requestStates(new RequestStateRecord(J, I, T0, 1, 0, 0, Map.of("WAITING", 1L)));
        sink.requestStates(
                new RequestStateRecord(J, I, T0 + 2_500_000L, 0, 1, 0, Map.of("WAITING", 0L, "RUNNING", 1L), 253317L));
        sink.pd(new PdRecord(
                J,
                I,
                PdRecord.KV_PULL,
                "PullKVCache",
                "9",
                "3",
                "1",
                T0,
                4_200_000L,
                64L,
                Map.of("block_tables", "[1,2]", "seq_len", "128")));
        sink.pd(new PdRecord(J, I, PdRecord.COMMUNICATION, "receiveReq", "9", "0", null, T0, 0L, null, null));
        sink.pd(new PdRecord(
                J, I, PdRecord.COMMUNICATION, "sendReqToD", "9", "0", null, T0 + 1_500_000L, 10L, null, null));
        sink.pd(new PdRecord(J, I, PdRecord.COMMUNICATION, "other", "9", "0", null, T0 + 1_600_000L, 0L, null, null));
        sink.pd(new PdRecord(
                J, I, PdRecord.COMMUNICATION, "decodeRes", "9", "0", null, T0 + 90_000_000L, 0L, null, null));
        sink.pd(new PdRecord(J, I, PdRecord.COMMUNICATION, "receiveReq", "10", "0", null, T0 + 5L, 0L, null, null));
        sink.coordinator(new CoordinatorRecord(J, I, "10.0.0.1:1025", T0 + 3_000_000L, "RequestDispatch", 3, 1, 2));
        sink.coordinator(
                new CoordinatorRecord(J, I, "10.0.0.2:1025", T0 + 4_000_000L, "RequestDispatch", 1, 0, 1, "prefill"));
        // EP: the later record of (layer 0, rank 0) replaces the first; rank "10" sorts after rank "2"
        sink.epBalance(new EpBalanceRecord(J, I, 2, 0, "0", 1, 100_000L, 100_000.0, 1.0));
        sink.epBalance(new EpBalanceRecord(J, I, 2, 0, "0", 2, 300_000L, 150_000.0, 0.75));
        sink.epBalance(new EpBalanceRecord(J, I, 2, 0, "10", 2, 500_000L, 250_000.0, 1.25));
        sink.epBalance(new EpBalanceRecord(J, I, 2, 1, "0", 2, 200_000L, 100_000.0, 1.0));
        sink.epBalance(new EpBalanceRecord(J, I, 2, 1, "10", 2, 200_000L, 100_000.0, 1.0));
        sink.epBalance(new EpBalanceRecord(J, I, 2, 1, "2", 1, 100_000L, 100_000.0, 1.0));
        sink.epBalance(new EpBalanceRecord(J, I, 2, 1, "5", 1, 100_000L, 100_000.0, 1.0));
        sink.epBalance(new EpBalanceRecord(J, I, 2, 1, "5", 0, 0L, 0.0, 0.0)); // rank 5 forgotten: no column
        sink.moe(new MoeRecord(J, I, MoeRecord.DISPATCH, "0", 10, 50_000, 80_000, 120_000, 82_500.5, 3, 10, 0.3));
        sink.moe(new MoeRecord(J, I, MoeRecord.DISPATCH, "1", 10, 60_000, 90_000, 200_000, 95_000, 7, 10, 0.7));
        sink.moe(new MoeRecord(J, I, MoeRecord.COMBINE, "0", 10, 40_000, 70_000, 90_000, 70_000, 10, 10, 1.0));
        sink.moe(new MoeRecord(J, I, MoeRecord.COMBINE, "1", 10, 30_000, 50_000, 60_000, 48_000, 0, 10, 0.0));
        // rank 0's calls as the analyzer hands them over: 10, 20, ..., 200 µs, dispatch and combine alternating;
        // rank 1 sends none (its device row falls back to the records: exact mean, no percentiles)
        for (int i = 1; i <= 20; i++) {
            sink.moeCall(J, I, i % 2 == 0 ? MoeRecord.COMBINE : MoeRecord.DISPATCH, "0", i * 10_000L);
        }
        sink.anomaly(new Anomaly(J, I, AnomalyKind.values()[0], "test anomaly", "here"));
        sink.close();
    }

    static List<String> lines(String file) throws Exception {
        return Files.readAllLines(dir.resolve(file));
    }

    @Test
    void requestCsvHasMsServiceProfilersColumnsThenOursAndValuesInMs() throws Exception {
        List<String> l = lines("request.csv");
        assertThat(l.get(0))
                .isEqualTo("http_rid,start_datetime,recv_token_size,reply_token_size,execution_time(ms),"
                        + "queue_wait_time(ms),first_token_latency(ms),cache_hit_rate,start_time(ms),end_time(ms),"
                        + "status,finish_reason,tpot(ms),dp_rank,enqueue_count,forward_steps,spec_accepted_tokens,"
                        + "aliases,instance");
        // e2e 1025500000 ns = 1025.5 ms; queue 1234567 ns = 1.234567 ms; start 1727940490718339000 ns =
        // 1727940490718.339 ms; end = start + 1025.5 ms
        assertThat(l.get(1))
                .isEqualTo("7,2024-10-03 07:28:10:718339,4,101,1025.5,1.234567,25.5,0.25,1727940490718.339,"
                        + "1727940491743.839,FINISHED,stop,10,0,1,101,,7-abcdef12,job/inst");
        // a timed-out request: what is unknown is empty, never 0
        assertThat(l.get(2))
                .isEqualTo("8,2024-10-03 07:28:10:718340,16,,,2,,,1727940490718.34,,TIMED_OUT,timeout,,,2,0,,,"
                        + "job/inst");
        assertThat(l).hasSize(3);
        assertThat(sink.finishedRequests()).isEqualTo(1);
        assertThat(sink.timedOutRequests()).isEqualTo(1);
    }

    @Test
    void batchCsvWritesMsNotMicrosecondsAndSplitsTokensOnlyForPureBatches() throws Exception {
        List<String> l = lines("batch.csv");
        assertThat(l.get(0))
                .isEqualTo("name,res_list,start_datetime,end_datetime,during_time(ms),batch_type,prof_id,batch_size,"
                        + "prefill_batch_size,decode_batch_size,total_blocks,used_blocks,free_blocks,"
                        + "blocks_allocated,blocks_freed,kvcache_usage_rate,prefill_scheduled_tokens,"
                        + "decode_scheduled_tokens,total_scheduled_tokens,dp_rank,start_time(ms),end_time(ms),"
                        + "accepted_ratio,accepted_ratio_per_pos,kind,instance");
        // 123456 ns = 0.123456 ms (msServiceProfiler would print 123.456 under the same "ms" header)
        assertThat(l.get(1))
                .isEqualTo("BatchSchedule,\"[\"\"1\"\",\"\"2\"\"]\",2024-10-03 07:28:10:718339,"
                        + "2024-10-03 07:28:10:718462,0.123456,decode,253317,2,0,2,,,1978,,,0.0115,0,2,2,1,"
                        + "1727940490718.339,1727940490718.462456,,,schedule,job/inst");
        // mixed batch: 130 scheduled tokens cannot be split between prefill and decode
        assertThat(l.get(2))
                .isEqualTo("modelExec,\"[\"\"1\"\",\"\"2\"\",\"\"3\"\"]\",2024-10-03 07:28:10:718539,"
                        + "2024-10-03 07:28:10:743539,25,mixed,253317,3,1,2,,,,,,,,,130,,1727940490718.539,"
                        + "1727940490743.539,,,execute,job/inst");
    }

    @Test
    void forwardCsvRelativeToTheInstancesFirstForwardWithBubbles() throws Exception {
        List<String> l = lines("forward.csv");
        assertThat(l.get(0))
                .isEqualTo("name,relative_start_time(ms),start_datetime,end_datetime,during_time(ms),"
                        + "bubble_time(ms),batch_size,batch_type,forward_iter,dp_rank,prof_id,hostname,"
                        + "start_time(ms),end_time(ms),instance");
        assertThat(l.get(1))
                .isEqualTo("forward,0,2024-10-03 07:28:10:719339,2024-10-03 07:28:10:729339,10,0.5,1,prefill,0,0,1,"
                        + "inst,1727940490719.339,1727940490729.339,job/inst");
        assertThat(l.get(2))
                .isEqualTo("specDecoding,10.5,2024-10-03 07:28:10:729839,2024-10-03 07:28:10:738839,9,,1,decode,1,"
                        + "0,1,inst,1727940490729.839,1727940490738.839,job/inst");
    }

    @Test
    void kvcacheCsvDerivesAllocatedAndFreedBlocksFromConsecutiveFreeCounts() throws Exception {
        List<String> l = lines("kvcache.csv");
        assertThat(l.get(0))
                .isEqualTo("rid,name,start_time,total_blocks,used_blocks,free_blocks,blocks_allocated,blocks_freed,"
                        + "device_kvcache_left,kvcache_usage_rate,domain,timestamp(ms),dp_rank,allocations,frees,"
                        + "instance");
        // records without the raw event behind them: the domain is the one the engine reads them from
        assertThat(l.get(1))
                .isEqualTo("7,Allocate,2024-10-03 07:28:10:718339,120,20,100,,,100,0.16666666666666666,KVCache,"
                        + "1727940490718.339,,1,0,job/inst");
        assertThat(l.get(2))
                .isEqualTo("7,AppendSlot,2024-10-03 07:28:10:718340,120,30,90,10,0,90,0.25,KVCache,"
                        + "1727940490718.34,,1,0,job/inst");
        assertThat(l.get(3))
                .isEqualTo("7,Free,2024-10-03 07:28:10:718341,120,25,95,0,5,95,0.20833333333333334,KVCache,"
                        + "1727940490718.341,,1,1,job/inst");
    }

    @Test
    void requestStatusCsvIsADenseSnapshotSeries() throws Exception {
        List<String> l = lines("request_status.csv");
        assertThat(l.get(0))
                .isEqualTo("hostuid,pid,start_datetime,relative_timestamp(ms),waiting,running,swapped,timestamp(ms),"
                        + "states,instance");
        assertThat(l.get(1))
                .isEqualTo("inst,,2024-10-03 07:28:10:718339,0,1,0,0,1727940490718.339,\"{\"\"WAITING\"\":1}\","
                        + "job/inst");
        assertThat(l.get(2))
                .isEqualTo("inst,253317,2024-10-03 07:28:10:720839,2.5,0,1,0,1727940490720.839,"
                        + "\"{\"\"RUNNING\"\":1,\"\"WAITING\"\":0}\",job/inst");
    }

    @Test
    void pdFilesOneRowPerPullAndOneRowPerRequestPivotedByEventName() throws Exception {
        List<String> kv = lines("pd_split_kvcache.csv");
        assertThat(kv.get(0))
                .isEqualTo("domain,rank,rid,block_tables,seq_len,during_time(ms),start_datetime(ms),"
                        + "end_datetime(ms),start_time(ms),end_time(ms),name,peer,blocks,instance");
        assertThat(kv.get(1))
                .isEqualTo("KVCache,3,9,\"[1,2]\",128,4.2,2024-10-03 07:28:10:718,2024-10-03 07:28:10:722,"
                        + "1727940490718.339,1727940490722.539,PullKVCache,1,64,job/inst");
        List<String> comm = lines("pd_split_communication.csv");
        assertThat(comm)
                .containsExactly(
                        "rid,http_req_time(ms),send_request_time(ms),send_request_succ_time(ms),prefill_res_time(ms),"
                                + "request_end_time(ms),events,instance",
                        // written at decodeRes; 4 events including the unnamed "other"
                        "9,1727940490718.339,1727940490719.839,,,1727940490808.339,4,job/inst",
                        // still open at the end: written on close
                        "10,1727940490718.339005,,,,,1,job/inst");
    }

    @Test
    void coordinatorCsv() throws Exception {
        assertThat(lines("coordinator.csv"))
                .containsExactly(
                        "time,address,node_type,add_count,end_count,running_count,timestamp(ms),name,instance",
                        "2024-10-03 07:28:10:721339,10.0.0.1:1025,,3,1,2,1727940490721.339,RequestDispatch,job/inst",
                        "2024-10-03 07:28:10:722339,10.0.0.2:1025,prefill,1,0,1,1727940490722.339,RequestDispatch,"
                                + "job/inst");
    }

    @Test
    void epBalanceCsvIsLayerByRankTotalsInMsLatestRecordWins() throws Exception {
        // layer 0 rank 0: the second record (300000 ns = 0.3 ms) replaced the first; rank 2 has no layer-0 call
        assertThat(lines("ep_balance.csv")).containsExactly("decoder_layer,0,2,10", "0,0.3,,0.5", "1,0.2,0.1,0.2");
        assertThat(sink.charts()).contains(dir.resolve("ep_balance.png"));
    }

    @Test
    void moeAnalysisCsvIsOneRowPerDeviceWithBothOpsAndTheDetailOneRowPerOp() throws Exception {
        assertThat(lines("moe_analysis.csv"))
                .containsExactly(
                        "Dataset,Mean,CI Lower,CI Upper,count,median,dispatch_slowest_share,combine_slowest_share,"
                                + "instance",
                        // 20 calls 10..200 µs: mean 105 µs; nearest rank p2.5 = 1st (10 µs), p50 = 10th (100 µs),
                        // p97.5 = 20th (200 µs)
                        "0,0.105,0.01,0.2,20,0.1,0.3,1,job/inst",
                        // no calls: mean of both records weighted by their counts (95 µs x 10 + 48 µs x 10) / 20
                        "1,0.0715,,,20,,0.7,0,job/inst");
        assertThat(lines("moe_analysis_detail.csv"))
                .containsExactly(
                        "Dataset,op,count,mean(ms),p2.5(ms),median(ms),p97.5(ms),slowest_count,aligned_calls,"
                                + "slowest_share,instance",
                        "0,combine,10,0.07,0.04,0.07,0.09,10,10,1,job/inst",
                        "1,combine,10,0.048,0.03,0.05,0.06,0,10,0,job/inst",
                        // mean 82500.5 ns rounds to 82501 ns = 0.082501 ms
                        "0,dispatch,10,0.082501,0.05,0.08,0.12,3,10,0.3,job/inst",
                        "1,dispatch,10,0.095,0.06,0.09,0.2,7,10,0.7,job/inst");
    }

    @Test
    void profilerDbHoldsTheSameRowsAsRealsAndTheCurveTables() throws Exception {
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("profiler.db"))) {
            List<List<Object>> req = query(c, "SELECT * FROM request ORDER BY http_rid");
            assertThat(columns(c, "request")).startsWith("http_rid", "start_datetime", "recv_token_size");
            assertThat(req).hasSize(2);
            assertThat(req.get(0).get(0)).isEqualTo("7");
            assertThat((Double) req.get(0).get(4)).isEqualTo(1025.5);
            assertThat((Double) req.get(0).get(5)).isCloseTo(1.234567, within(1e-12));
            assertThat(req.get(1).get(4)).isNull(); // timed out: no execution time
            assertThat(scalar(c, "SELECT count(*) FROM batch")).isEqualTo(2);
            assertThat(scalar(c, "SELECT count(*) FROM forward")).isEqualTo(2);
            assertThat(scalar(c, "SELECT count(*) FROM kvcache")).isEqualTo(3);
            assertThat(scalar(c, "SELECT count(*) FROM request_status")).isEqualTo(2);
            assertThat(scalar(c, "SELECT count(*) FROM pd_split_kvcache")).isEqualTo(1);
            assertThat(scalar(c, "SELECT count(*) FROM pd_split_communication")).isEqualTo(2);
            assertThat(scalar(c, "SELECT count(*) FROM coordinator")).isEqualTo(2);
            assertThat(scalar(c, "SELECT count(*) FROM moe_analysis")).isEqualTo(2);
            assertThat(scalar(c, "SELECT count(*) FROM moe_analysis_detail")).isEqualTo(4);
            assertThat(scalar(c, "SELECT count(*) FROM ep_balance")).isEqualTo(2);
            assertThat(scalar(c, "SELECT count(*) FROM ep_balance_detail")).isEqualTo(5);
            assertThat(query(c, "SELECT \"0\", \"2\", \"10\" FROM ep_balance WHERE decoder_layer = 1"))
                    .containsExactly(List.of(0.2, 0.1, 0.2));
            // curves: one request with a TTFT (25.5 ms = 25500 µs), e2e 1025500 µs, prefill 4 tokens in 25.5 ms,
            // decode 1 token per 10 ms = 100 tokens/s
            assertThat(query(c, "SELECT avg, p99, p90, p50, count FROM first_token_latency"))
                    .containsExactly(List.of(25500.0, 25500.0, 25500.0, 25500.0, 1L));
            assertThat(query(c, "SELECT timestamp, avg FROM req_latency"))
                    .containsExactly(List.of("2024-10-03 07:28:11:743839", 1025500.0));
            assertThat((Double)
                            query(c, "SELECT avg FROM prefill_gen_speed").get(0).get(0))
                    .isCloseTo(4 / 0.0255, within(1e-9));
            assertThat(query(c, "SELECT avg FROM decode_gen_speed")).containsExactly(List.of(100.0));
        }
        assertThat(sink.dbRows()).containsKeys("request", "batch", "first_token_latency", "ep_balance");
    }

    @Test
    void chartsArePngsOfSaneSizeThatAreNotBlank() throws Exception {
        for (String name : List.of("ep_balance.png", "moe_analysis.png")) {
            BufferedImage img = ImageIO.read(dir.resolve(name).toFile());
            assertThat(img).as(name).isNotNull();
            assertThat(img.getWidth()).as(name).isBetween(640, 2400);
            assertThat(img.getHeight()).as(name).isBetween(480, 2400);
            Set<Integer> colours = new HashSet<>();
            for (int y = 0; y < img.getHeight(); y += 3) {
                for (int x = 0; x < img.getWidth(); x += 3) {
                    colours.add(img.getRGB(x, y));
                }
            }
            assertThat(colours.size()).as(name + " distinct colours").isGreaterThan(10);
        }
    }

    @Test
    void anomaliesAreCountedAndKept() {
        assertThat(sink.anomalyCount()).isEqualTo(1);
        assertThat(sink.anomalies().get(0).message()).isEqualTo("test anomaly");
    }

    @Test
    void noEpOrMoeDataMeansNoPngAndANotice(@TempDir Path empty) throws Exception {
        ExportSink s = new ExportSink(empty);
        s.coordinator(new CoordinatorRecord(J, I, "n", T0, "x", 1, 0, 1));
        s.close();
        assertThat(empty.resolve("ep_balance.png")).doesNotExist();
        assertThat(empty.resolve("moe_analysis.png")).doesNotExist();
        assertThat(empty.resolve("request.csv")).doesNotExist(); // no rows, no file
        assertThat(empty.resolve("coordinator.csv")).exists();
        assertThat(s.notices()).hasSize(2).allMatch(n -> n.contains("not written"));
        assertThat(s.charts()).isEmpty();
    }

    static List<List<Object>> query(Connection c, String sql) throws Exception {
        List<List<Object>> rows = new ArrayList<>();
        try (ResultSet rs = c.createStatement().executeQuery(sql)) {
            int n = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                List<Object> row = new ArrayList<>();
                for (int i = 1; i <= n; i++) {
                    Object v = rs.getObject(i);
                    row.add(v instanceof Integer x ? Long.valueOf(x) : v);
                }
                rows.add(row);
            }
        }
        return rows;
    }

    static long scalar(Connection c, String sql) throws Exception {
        try (ResultSet rs = c.createStatement().executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static List<String> columns(Connection c, String table) throws Exception {
        List<String> cols = new ArrayList<>();
        try (ResultSet rs = c.createStatement().executeQuery("SELECT * FROM " + table + " LIMIT 0")) {
            ResultSetMetaData md = rs.getMetaData();
            for (int i = 1; i <= md.getColumnCount(); i++) {
                cols.add(md.getColumnName(i));
            }
        }
        return cols;
    }
}
