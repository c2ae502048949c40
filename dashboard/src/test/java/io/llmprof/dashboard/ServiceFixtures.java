package io.llmprof.dashboard;

import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;
import java.util.List;
import java.util.Map;

/**
 * Hand-built service records of instance {@code llama/i0} with known answers (times in ms for reading):
 *
 * <pre>
 * rid    status    reason  arrival ttft  e2e   tpot  queue enq in  out
 * 1      FINISHED  stop    0       50    1050  100   20    1   100 11   tpot = (1050-50)/(11-1)
 * req-7  FINISHED  length  100     400   2400  20    310   2   50  101  tpot = (2400-400)/(101-1); alias with hash
 * 3      TIMED_OUT timeout 200     -     -     -     5000  1   30  -    never ran a forward
 * 4      FINISHED  abort   300     30    35    -     0     1   10  1    one token: no TPOT
 * </pre>
 */
public final class ServiceFixtures {
    public static final String JOB = "llama";
    public static final String INSTANCE = "i0";
    public static final long MS = 1_000_000L;

    private ServiceFixtures() {}

    public static RequestRecord finished(
            String rid,
            List<String> aliases,
            String reason,
            long arrivalMs,
            long ttftMs,
            long e2eMs,
            long queueMs,
            int enqueues,
            long in,
            long out) {
        Double tpot = out < 2 ? null : (double) (e2eMs - ttftMs) * MS / (out - 1);
        return new RequestRecord(
                JOB,
                INSTANCE,
                rid,
                aliases,
                RequestRecord.FINISHED,
                reason,
                "0",
                arrivalMs * MS,
                (arrivalMs + ttftMs) * MS,
                (arrivalMs + e2eMs) * MS,
                ttftMs * MS,
                tpot,
                e2eMs * MS,
                queueMs * MS,
                enqueues,
                in,
                out,
                out,
                null,
                null,
                (arrivalMs + e2eMs) * MS);
    }

    public static List<RequestRecord> requests() {
        return List.of(
                finished("1", List.of(), "stop", 0, 50, 1050, 20, 1, 100, 11),
                finished("req-7", List.of("req-7-1a2b3c4d"), "length", 100, 400, 2400, 310, 2, 50, 101),
                timedOut("3", 200, 5000, 30),
                finished("4", List.of(), "abort", 300, 30, 35, 0, 1, 10, 1));
    }

    public static RequestRecord timedOut(String rid, long arrivalMs, long queueMs, long in) {
        return new RequestRecord(
                JOB,
                INSTANCE,
                rid,
                List.of(),
                RequestRecord.TIMED_OUT,
                "timeout",
                null,
                arrivalMs * MS,
                null,
                null,
                null,
                null,
                null,
                queueMs * MS,
                1,
                in,
                null,
                0,
                null,
                null,
                (arrivalMs + queueMs) * MS);
    }

    public static RequestRecord withInstance(RequestRecord r, String instance) {
        return with(r, r.job(), instance, r.rid(), r.aliases());
    }

    /** {@code r} with another identity: job, instance, id and aliases. */
    public static RequestRecord with(RequestRecord r, String job, String instance, String rid, List<String> aliases) {
        return new RequestRecord(
                job,
                instance,
                rid,
                aliases,
                r.status(),
                r.finishReason(),
                r.dpRank(),
                r.arrivalNs(),
                r.firstTokenNs(),
                r.endNs(),
                r.ttftNs(),
                r.tpotNs(),
                r.e2eNs(),
                r.queueWaitNs(),
                r.enqueues(),
                r.inputTokens(),
                r.outputTokens(),
                r.forwardSteps(),
                r.specAcceptedTokens(),
                r.cacheHitRate(),
                r.lastEventNs());
    }

    /** b1 schedule of 4 (prefill), b2 its execution, b3 an execution of 1 (decode). */
    public static List<BatchRecord> batches() {
        return List.of(
                batch("BatchSchedule", BatchRecord.SCHEDULE, 1000, 4, "prefill"),
                batch("modelExec", BatchRecord.EXECUTE, 1001, 4, "prefill"),
                batch("modelExec", BatchRecord.EXECUTE, 1020, 1, "decode"));
    }

    public static BatchRecord batch(String name, String kind, long startMs, int size, String type) {
        return new BatchRecord(
                JOB,
                INSTANCE,
                name,
                kind,
                7L,
                "0",
                startMs * MS,
                2 * MS,
                type,
                size,
                type.equals("prefill") ? size : 0,
                type.equals("decode") ? size : 0,
                null,
                null,
                null,
                List.of("1"));
    }

    /** Bubbles 2 ms, -1 ms (overlap), none (last forward). */
    public static List<ForwardRecord> forwards() {
        return List.of(
                new ForwardRecord(JOB, INSTANCE, 7L, "0", 0, 1000 * MS, 10 * MS, 2 * MS, "prefill", 4, false),
                new ForwardRecord(JOB, INSTANCE, 7L, "0", 1, 1012 * MS, 10 * MS, -1 * MS, "decode", 4, false),
                new ForwardRecord(JOB, INSTANCE, 7L, "0", 2, 1021 * MS, 10 * MS, null, "decode", 1, true));
    }

    /** Snapshot s2 is the latest: waiting 1, running 2, swapped 1. */
    public static List<RequestStateRecord> states() {
        return List.of(
                new RequestStateRecord(JOB, INSTANCE, 10 * MS, 3, 1, 0, Map.of("WAITING", 3L, "RUNNING", 1L)),
                new RequestStateRecord(
                        JOB, INSTANCE, 20 * MS, 1, 2, 1, Map.of("WAITING", 1L, "RUNNING", 2L, "PENDING", 1L)));
    }

    /** dp 0: 10 then 25 of 100 blocks used; dp 1: 75 of 300. Usage now (25 + 75) / (100 + 300) = 0.25. */
    public static List<KvCacheRecord> kvcache() {
        return List.of(
                kv("0", 1, "Allocate", 100L, 10L, 0.1, 1, 0),
                kv("1", 2, "Allocate", 300L, 75L, 0.25, 1, 0),
                kv("0", 3, "AppendSlot", 100L, 25L, 0.25, 2, 0));
    }

    public static KvCacheRecord kv(
            String dp, long timeMs, String name, Long total, Long used, Double usage, long allocs, long frees) {
        return new KvCacheRecord(
                JOB,
                INSTANCE,
                dp,
                timeMs * MS,
                name,
                "1",
                total,
                used,
                total == null || used == null ? null : total - used,
                usage,
                allocs,
                frees);
    }

    /** Layers 0 and 1 over ranks 0, 1, 2, 10 (numeric order, not text order); rank 10 of layer 1 is missing. */
    public static List<EpBalanceRecord> epBalance() {
        return List.of(
                ep(0, "10", 4, 400, 1.6),
                ep(0, "0", 4, 200, 0.8),
                ep(0, "2", 4, 200, 0.8),
                ep(0, "1", 4, 200, 0.8),
                ep(1, "0", 2, 100, 1.0),
                ep(1, "1", 2, 100, 1.0),
                ep(1, "2", 2, 100, 1.0));
    }

    public static EpBalanceRecord ep(int layer, String rank, long count, long totalUs, double ratio) {
        long totalNs = totalUs * 1000;
        return new EpBalanceRecord(JOB, INSTANCE, 58, layer, rank, count, totalNs, (double) totalNs / count, ratio);
    }

    /** Dispatch: rank 1 slowest in 7 of 10 aligned calls, rank 0 in 3. Combine: not compared yet. */
    public static List<MoeRecord> moe() {
        return List.of(
                new MoeRecord(JOB, INSTANCE, MoeRecord.DISPATCH, "1", 10, 1e5, 2e5, 9e5, 3e5, 7, 10, 0.7),
                new MoeRecord(JOB, INSTANCE, MoeRecord.DISPATCH, "0", 10, 1e5, 1.5e5, 2e5, 1.5e5, 3, 10, 0.3),
                new MoeRecord(JOB, INSTANCE, MoeRecord.COMBINE, "0", 1, 5e4, 5e4, 5e4, 5e4, 0, 0, null));
    }

    public static PdRecord pd() {
        return new PdRecord(
                JOB,
                INSTANCE,
                PdRecord.KV_PULL,
                "PullKVCache",
                "1",
                "0",
                "8",
                500 * MS,
                3 * MS,
                12L,
                Map.of("link", "hccs"));
    }

    public static List<CoordinatorRecord> coordinator() {
        return List.of(
                new CoordinatorRecord(JOB, INSTANCE, "10.0.0.2", 1 * MS, "ReqDispatch", 1, 0, 1),
                new CoordinatorRecord(JOB, INSTANCE, "10.0.0.1", 2 * MS, "ReqDispatch", 3, 1, 2),
                new CoordinatorRecord(JOB, INSTANCE, "10.0.0.2", 3 * MS, "ReqEnd", 1, 1, 0));
    }
}
