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

    /** Bad or inconsistent input the analyzer noticed (it never throws on input). */
    void anomaly(Anomaly a);
}
