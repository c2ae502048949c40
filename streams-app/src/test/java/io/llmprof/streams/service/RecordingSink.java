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
import java.util.ArrayList;
import java.util.List;

/** Keeps everything an analyzer emits, in order (all) and by type. */
final class RecordingSink implements ServiceSink {
    final List<Object> all = new ArrayList<>();
    final List<RequestRecord> requests = new ArrayList<>();
    final List<BatchRecord> batches = new ArrayList<>();
    final List<ForwardRecord> forwards = new ArrayList<>();
    final List<KvCacheRecord> kv = new ArrayList<>();
    final List<RequestStateRecord> states = new ArrayList<>();
    final List<PdRecord> pd = new ArrayList<>();
    final List<CoordinatorRecord> coordinator = new ArrayList<>();
    final List<EpBalanceRecord> ep = new ArrayList<>();
    final List<MoeRecord> moe = new ArrayList<>();
    final List<Anomaly> anomalies = new ArrayList<>();

    RequestRecord request(String rid) {
        return requests.stream()
                .filter(r -> r.rid().equals(rid))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no request " + rid + " in " + requests));
    }

    @Override
    public void request(RequestRecord r) {
        all.add(r);
        requests.add(r);
    }

    @Override
    public void batch(BatchRecord r) {
        all.add(r);
        batches.add(r);
    }

    @Override
    public void forward(ForwardRecord r) {
        all.add(r);
        forwards.add(r);
    }

    @Override
    public void kvCache(KvCacheRecord r) {
        all.add(r);
        kv.add(r);
    }

    @Override
    public void requestStates(RequestStateRecord r) {
        all.add(r);
        states.add(r);
    }

    @Override
    public void pd(PdRecord r) {
        all.add(r);
        pd.add(r);
    }

    @Override
    public void coordinator(CoordinatorRecord r) {
        all.add(r);
        coordinator.add(r);
    }

    @Override
    public void epBalance(EpBalanceRecord r) {
        all.add(r);
        ep.add(r);
    }

    @Override
    public void moe(MoeRecord r) {
        all.add(r);
        moe.add(r);
    }

    @Override
    public void anomaly(Anomaly a) {
        all.add(a);
        anomalies.add(a);
    }
}
