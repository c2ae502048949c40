package io.llmprof.streams.service.export;

import io.llmprof.events.RankKey;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.RequestRef;
import io.llmprof.events.service.ServiceEvent;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.BiConsumer;

/**
 * profiler.db's batch_req (the requests of each scheduled batch) and batch_exec (a scheduled batch and the
 * executions of the same request list), as msServiceProfiler's plugin_batch.py builds them: batch ids count the
 * scheduled batches from 1, and an execution joins the latest scheduled batch whose request list is the same. Memory:
 * the last {@value #MAX_OPEN_BATCHES} scheduled batches, by a hash of their list.
 */
final class BatchLinks {
    /** Scheduled batches remembered for batch_exec (an execution of an older one is not joined). */
    static final int MAX_OPEN_BATCHES = 4096;

    private final BiConsumer<ExportTable, List<?>> db;
    /** Scheduled batches by (instance, request list hash), newest last. */
    private final LinkedHashMap<String, Long> batchIds = new LinkedHashMap<>();

    private long lastBatchId;
    private long unmatchedExecutions;

    BatchLinks(BiConsumer<ExportTable, List<?>> db) {
        this.db = db;
    }

    /**
     * One batch record; {@code current} is the raw event being handled (null when unknown), whose requests carry
     * their raw ids and iterations, where the record keeps at most 512 canonical ids.
     */
    void batch(BatchRecord r, ServiceEvent current) {
        String key = RankKey.of(r.job(), r.instance()) + '\u0000' + requestListHash(r.rids());
        String pid = r.pid() == null ? null : r.pid().toString();
        Cells.Us start = new Cells.Us(r.startNs());
        Cells.Us end = new Cells.Us(r.startNs() + r.durNs());
        if (!BatchRecord.SCHEDULE.equals(r.kind())) {
            Long id = batchIds.get(key);
            if (id == null) {
                unmatchedExecutions++;
                return;
            }
            db.accept(ExportTable.BATCH_EXEC, Arrays.asList(id, r.name(), pid, start, end));
            return;
        }
        long id = ++lastBatchId;
        batchIds.remove(key);
        batchIds.put(key, id);
        if (batchIds.size() > MAX_OPEN_BATCHES) {
            Iterator<String> oldest = batchIds.keySet().iterator();
            oldest.next();
            oldest.remove();
        }
        db.accept(ExportTable.BATCH_EXEC, Arrays.asList(id, r.name(), pid, start, end));
        boolean fromEvent = current != null
                && current.name().equals(r.name())
                && current.startNs() == r.startNs()
                && !current.requests().isEmpty();
        if (fromEvent) {
            for (RequestRef ref : current.requests()) {
                db.accept(ExportTable.BATCH_REQ, Arrays.asList(id, ref.rawRid(), ref.rid(), ref.iter(), null));
            }
        } else {
            for (String rid : r.rids()) {
                db.accept(ExportTable.BATCH_REQ, Arrays.asList(id, rid, rid, null, null));
            }
        }
    }

    /** Executions whose request list matched no remembered scheduled batch (not written). */
    long unmatchedExecutions() {
        return unmatchedExecutions;
    }

    /** A 64-bit FNV-1a hash of a request list (order matters, as msServiceProfiler's tuple key). */
    static long requestListHash(List<String> rids) {
        long h = 0xcbf29ce484222325L;
        for (String rid : rids) {
            for (int i = 0; i < rid.length(); i++) {
                h ^= rid.charAt(i);
                h *= 0x100000001b3L;
            }
            h ^= 0x1f; // separator
            h *= 0x100000001b3L;
        }
        return h;
    }
}
