package io.llmprof.streams.service;

import io.llmprof.events.Anomaly;
import io.llmprof.events.service.BatchRecord;
import io.llmprof.events.service.CoordinatorRecord;
import io.llmprof.events.service.EpBalanceRecord;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.MoeRecord;
import io.llmprof.events.service.PdRecord;
import io.llmprof.events.service.RequestRecord;
import io.llmprof.events.service.RequestStateRecord;

/** Where {@link ServiceAnalyzer} puts what it finds: Kafka sinks live, CSV/DB writers offline. */
public interface ServiceSink {
    void request(RequestRecord r);

    void batch(BatchRecord r);

    void forward(ForwardRecord r);

    void kvCache(KvCacheRecord r);

    void requestStates(RequestStateRecord r);

    void pd(PdRecord r);

    void coordinator(CoordinatorRecord r);

    void epBalance(EpBalanceRecord r);

    void moe(MoeRecord r);

    /**
     * One MoE dispatch/combine call the analyzer counted (after its rank was admitted), for a writer that keeps its
     * own per-device distribution of both ops together (msServiceProfiler's moe_analysis rows); live sinks ignore it.
     */
    default void moeCall(String job, String instance, String op, String rank, long durNs) {}

    /** Bad or inconsistent input the analyzer noticed (it never throws on input). */
    void anomaly(Anomaly a);
}
