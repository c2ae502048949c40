package io.llmprof.streams.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.service.ServiceFixtures.Format;
import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceSynth;
import io.llmprof.events.service.ForwardRecord;
import io.llmprof.events.service.KvCacheRecord;
import io.llmprof.events.service.RequestRecord;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * synth-service's realistic timing as the engine sees it: the magnitudes a newcomer should learn from the demo (TTFT
 * tens to hundreds of ms, TPOT tens of ms, queues that grow under the load peak and drain, KV usage that rises and
 * falls) and the generator's truth, exactly.
 */
class RealisticServiceRunTest {
    private static final double MS = 1e6;

    @TempDir
    Path dir;

    @Test
    void theEngineSeesRealMagnitudesAndTheGeneratorsTruth() throws Exception {
        // one DP rank with the demo's per-rank load (the demo: 2,000 requests on 2 ranks)
        int kvBlocks = 3000;
        ServiceSynth.Spec spec =
                new ServiceSynth.Spec(1000, 1, 1).withKvBlocks(kvBlocks).withTiming(ServiceSynth.Timing.REALISTIC);
        ServiceSynth.Truth truth = ServiceSynth.write(spec, Format.JSONL, dir);
        ServiceAnalyzer analyzer = new ServiceAnalyzer("j", "i", ServiceConfig.DEFAULTS);
        RecordingSink sink = new RecordingSink();
        ServiceReaders.read(dir, e -> analyzer.accept(e, sink), p -> {
            throw new AssertionError(p.toString());
        });
        analyzer.finish(sink);
        assertThat(sink.anomalies).isEmpty();

        List<RequestRecord> requests = sink.requests.stream()
                .sorted(Comparator.comparingLong(RequestRecord::arrivalNs))
                .toList();
        assertThat(requests).hasSize(1000).allSatisfy(r -> assertThat(r.status())
                .isEqualTo(RequestRecord.FINISHED));
        assertThat(new long[] {
                    requests.stream().mapToLong(RequestRecord::ttftNs).sum(),
                    requests.stream().mapToLong(RequestRecord::e2eNs).sum(),
                    requests.stream().mapToLong(RequestRecord::queueWaitNs).sum(),
                    requests.stream().mapToLong(RequestRecord::inputTokens).sum(),
                    requests.stream().mapToLong(RequestRecord::outputTokens).sum(),
                    sink.forwards.size()
                })
                .containsExactly(
                        truth.ttftSumNs(),
                        truth.e2eSumNs(),
                        truth.queueWaitSumNs(),
                        truth.inputTokens(),
                        truth.outputTokens(),
                        truth.forwards());

        double ttftMs =
                requests.stream().mapToLong(RequestRecord::ttftNs).average().orElseThrow() / MS;
        double tpotMs =
                requests.stream().mapToDouble(RequestRecord::tpotNs).average().orElseThrow() / MS;
        assertThat(ttftMs).as("mean TTFT, ms").isBetween(10.0, 1000.0);
        assertThat(tpotMs).as("mean TPOT, ms").isBetween(10.0, 100.0);

        // queue waits by quarter of the arrivals: the load peaks in the middle of the run, past capacity
        double[] wait = new double[4];
        for (int q = 0; q < 4; q++) {
            wait[q] = requests.subList(q * 250, (q + 1) * 250).stream()
                            .mapToLong(RequestRecord::queueWaitNs)
                            .average()
                            .orElseThrow()
                    / MS;
        }
        double busiest = Math.max(wait[1], wait[2]);
        assertThat(busiest)
                .as("queue wait by quarter, ms: %s", java.util.Arrays.toString(wait))
                .isGreaterThan(5 * wait[0])
                .isGreaterThan(5 * wait[3])
                .isGreaterThan(100.0);

        List<ForwardRecord> prefills = sink.forwards.stream()
                .filter(f -> "prefill".equals(f.batchType()))
                .toList();
        List<ForwardRecord> decodes = sink.forwards.stream()
                .filter(f -> "decode".equals(f.batchType()))
                .toList();
        assertThat(prefills.size() + decodes.size()).isEqualTo(sink.forwards.size());
        assertThat(prefills).allSatisfy(f -> assertThat(f.durNs() / MS).isBetween(10.0, 400.0));
        assertThat(decodes).allSatisfy(f -> assertThat(f.durNs() / MS).isBetween(20.0, 30.0));

        // KV usage: low at the start, a peak under the load, 0 once the rank has drained
        ServiceSynth.KvRank k = truth.kv().get(0);
        List<KvCacheRecord> kv = sink.kv;
        assertThat(kv).hasSize((int) k.events());
        int peakAt = 0;
        for (int i = 0; i < kv.size(); i++) {
            assertThat(kv.get(i).usedBlocks()).isBetween(0L, (long) kvBlocks);
            if (kv.get(i).usedBlocks() > kv.get(peakAt).usedBlocks()) {
                peakAt = i;
            }
        }
        assertThat(kv.get(peakAt).usedBlocks()).isEqualTo(k.peakUsedBlocks()).isGreaterThan(kvBlocks / 2);
        assertThat(peakAt).isBetween(kv.size() / 5, kv.size() * 4 / 5);
        double early = kv.subList(0, kv.size() / 10).stream()
                .mapToLong(KvCacheRecord::usedBlocks)
                .max()
                .orElseThrow();
        assertThat(early).as("used blocks in the first tenth").isLessThan(k.peakUsedBlocks() * 0.6);
        KvCacheRecord last = kv.get(kv.size() - 1);
        assertThat(new long[] {last.usedBlocks(), last.freeBlocks(), last.allocations(), last.frees()})
                .containsExactly(0, k.finalFreeBlocks(), k.allocations(), k.frees());
        assertThat(k.finalFreeBlocks()).isEqualTo(kvBlocks);
    }
}
