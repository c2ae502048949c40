package io.llmprof.deploy.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.agent.service.ServiceReaders;
import io.llmprof.agent.service.ServiceSynth;
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
import io.llmprof.streams.service.ServiceAnalyzer;
import io.llmprof.streams.service.ServiceSink;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo's service sample carries EP/MoE and KV events at the magnitudes of a real serving run, an older sample
 * (without them, or with the fast µs-scale timing) is written again, and the engine with the demo's service settings
 * turns them into the records /api/requests, /api/ep-balance, /api/moe and /api/kvcache show, equal to the
 * generator's truth.
 */
class DemoServiceSampleTest {
    @TempDir
    Path dir;

    @Test
    void anOldSampleWithoutMoeIsWrittenAgainAndThenReused() throws Exception {
        // the marker and truth of the demo before EP/MoE events (same requests, dp and seed)
        Files.createDirectories(dir);
        Files.writeString(
                dir.resolve(".generated-by-synth"),
                "written by llmprof synth-service for the demo\nrequests=24 dp=2 seed=1\n");
        ServiceSynth.write(new ServiceSynth.Spec(24, 2, 1), io.llmprof.agent.service.ServiceFixtures.Format.SLICE, dir);
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(log, true, StandardCharsets.UTF_8);

        ServiceSynth.Truth first = DemoCommand.serviceSample(dir, 24, out);
        assertThat(log.toString(StandardCharsets.UTF_8)).contains("Generated service sample");
        assertThat(first.moeLayers()).isEqualTo(DemoCommand.SERVICE_MOE_LAYERS);
        assertThat(first.ep()).hasSize(DemoCommand.SERVICE_MOE_LAYERS * DemoCommand.SERVICE_EP_RANKS);
        assertThat(first.kvBlocks()).isEqualTo(DemoCommand.SERVICE_KV_BLOCKS);

        log.reset();
        ServiceSynth.Truth again = DemoCommand.serviceSample(dir, 24, out);
        assertThat(log.size()).as("reused, not generated").isZero();
        assertThat(again).isEqualTo(first);
    }

    @Test
    void aSampleOfTheMoeDemoWithoutKvEventsIsWrittenAgain() throws Exception {
        // the marker and sample of the demo before KV events
        Files.writeString(
                dir.resolve(".generated-by-synth"),
                "written by llmprof synth-service for the demo\nrequests=24 dp=2 seed=1 moe=4 ep=4 slow=3\n");
        ServiceSynth.write(
                new ServiceSynth.Spec(24, 2, 1).withMoe(4, 4),
                io.llmprof.agent.service.ServiceFixtures.Format.SLICE,
                dir);
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        ServiceSynth.Truth t = DemoCommand.serviceSample(dir, 24, new PrintStream(log, true, StandardCharsets.UTF_8));
        assertThat(log.toString(StandardCharsets.UTF_8)).contains("Generated service sample");
        assertThat(t.kv()).hasSize(2);
        assertThat(Files.readString(dir.resolve(".generated-by-synth")))
                .contains(" kv=" + DemoCommand.SERVICE_KV_BLOCKS);
    }

    @Test
    void aSampleOfTheFastTimingDemoIsWrittenAgainAtRealMagnitudes() throws Exception {
        // the marker and sample of the demo before the realistic timing: TTFT 0.3 ms, TPOT 0.1 ms
        Files.writeString(
                dir.resolve(".generated-by-synth"),
                "written by llmprof synth-service for the demo\nrequests=24 dp=2 seed=1 moe=4 ep=4 slow=3 kv=272\n");
        ServiceSynth.write(
                new ServiceSynth.Spec(24, 2, 1).withMoe(4, 4).withKvBlocks(272),
                io.llmprof.agent.service.ServiceFixtures.Format.SLICE,
                dir);
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        ServiceSynth.Truth t = DemoCommand.serviceSample(dir, 24, new PrintStream(log, true, StandardCharsets.UTF_8));
        assertThat(log.toString(StandardCharsets.UTF_8))
                .contains("was written for another demo; writing it again", "Generated service sample");
        assertThat(Files.readString(dir.resolve(".generated-by-synth"))).contains(" timing=realistic");
        assertThat(t.kvBlocks()).isEqualTo(DemoCommand.SERVICE_KV_BLOCKS);
        assertThat(t.ttftSumNs() / t.requests()).as("mean TTFT, ns").isGreaterThan(10_000_000L);
    }

    @Test
    void theEngineWithTheDemoSettingsReportsTheSamplesEpAndMoeTruth() throws Exception {
        ServiceSynth.Truth truth = DemoCommand.serviceSample(dir, 400, new PrintStream(new ByteArrayOutputStream()));
        ServiceAnalyzer analyzer = new ServiceAnalyzer("demo", "sample", DemoCommand.serviceConfig());
        Map<String, EpBalanceRecord> ep = new TreeMap<>();
        Map<String, MoeRecord> moe = new TreeMap<>();
        Map<String, List<KvCacheRecord>> kv = new TreeMap<>();
        List<RequestRecord> requests = new ArrayList<>();
        List<Anomaly> anomalies = new ArrayList<>();
        ServiceSink sink = new ServiceSink() {
            @Override
            public void request(RequestRecord r) {
                requests.add(r);
            }

            @Override
            public void batch(BatchRecord r) {}

            @Override
            public void forward(ForwardRecord r) {}

            @Override
            public void kvCache(KvCacheRecord r) {
                kv.computeIfAbsent(r.dpRank(), k -> new ArrayList<>()).add(r);
            }

            @Override
            public void requestStates(RequestStateRecord r) {}

            @Override
            public void pd(PdRecord r) {}

            @Override
            public void coordinator(CoordinatorRecord r) {}

            @Override
            public void epBalance(EpBalanceRecord r) {
                ep.put(r.layer() + "/" + r.rank(), r); // the latest record per cell, as the dashboard keeps
            }

            @Override
            public void moe(MoeRecord r) {
                moe.put(r.op() + "/" + r.rank(), r);
            }

            @Override
            public void anomaly(Anomaly a) {
                anomalies.add(a);
            }
        };
        ServiceReaders.read(dir, e -> analyzer.accept(e, sink), p -> {
            throw new AssertionError(p.toString());
        });
        analyzer.finish(sink);
        assertThat(anomalies).isEmpty();

        assertThat(ep).hasSize(truth.ep().size());
        for (ServiceSynth.EpCell c : truth.ep()) {
            EpBalanceRecord r = ep.get(c.layer() + "/" + c.rank());
            assertThat(new long[] {r.moeLayers(), r.count(), r.totalNs()})
                    .as("layer %d rank %d", c.layer(), c.rank())
                    .containsExactly(DemoCommand.SERVICE_MOE_LAYERS, c.count(), c.totalNs());
        }
        assertThat(moe).hasSize(truth.moe().size());
        for (ServiceSynth.MoeCell c : truth.moe()) {
            MoeRecord r = moe.get(c.op() + "/" + c.rank());
            assertThat(new long[] {r.count(), r.slowestCount(), r.alignedCalls()})
                    .as("%s rank %d", c.op(), c.rank())
                    .containsExactly(c.count(), c.slowestCount(), c.alignedCalls());
        }
        // the last EP rank (3) is the slow one: slowest in every aligned combine
        MoeRecord slow = moe.get("combine/3");
        assertThat(slow.slowestCount()).isEqualTo(slow.alignedCalls()).isEqualTo(slow.count());
        assertThat(slow.alignedCalls()).isEqualTo(truth.forwards() * DemoCommand.SERVICE_MOE_LAYERS);

        // KV cache per dp rank: one record per KVCache event, each naming its (open) request; the last one after
        // every request's Free (used 0, all blocks free); the peak usage is the generator's peak used / total
        assertThat(requests).hasSize((int) truth.requests());
        assertThat(kv).hasSize(2);
        long total = DemoCommand.SERVICE_KV_BLOCKS;
        for (ServiceSynth.KvRank k : truth.kv()) {
            List<KvCacheRecord> rs = kv.get(Integer.toString(k.dpRank()));
            assertThat(rs).as("dp rank %d", k.dpRank()).hasSize((int) k.events());
            assertThat(rs).allSatisfy(r -> {
                assertThat(r.rid()).isNotNull();
                assertThat(r.totalBlocks()).isEqualTo(total);
            });
            KvCacheRecord last = rs.get(rs.size() - 1);
            assertThat(last.name()).isEqualTo("Free");
            assertThat(new long[] {last.allocations(), last.frees(), last.freeBlocks(), last.usedBlocks()})
                    .containsExactly(k.allocations(), k.frees(), k.finalFreeBlocks(), 0);
            assertThat(last.usage()).isEqualTo(0.0);
            // 400 requests: 200 per dp rank, an Allocate and a Free each
            assertThat(k.allocations()).isEqualTo(200);
            double peak = rs.stream().mapToDouble(KvCacheRecord::usage).max().orElseThrow();
            assertThat(peak).isEqualTo((double) k.peakUsedBlocks() / total);
            assertThat(peak).as("usage moves noticeably").isGreaterThan(0.4);
        }

        // the page's request figures: what the generator says, at the magnitudes of a real serving run
        assertThat(new long[] {
                    requests.stream().mapToLong(RequestRecord::ttftNs).sum(),
                    requests.stream().mapToLong(RequestRecord::e2eNs).sum(),
                    requests.stream().mapToLong(RequestRecord::queueWaitNs).sum()
                })
                .containsExactly(truth.ttftSumNs(), truth.e2eSumNs(), truth.queueWaitSumNs());
        double ttftMs =
                requests.stream().mapToLong(RequestRecord::ttftNs).average().orElseThrow() / 1e6;
        double tpotMs =
                requests.stream().mapToDouble(RequestRecord::tpotNs).average().orElseThrow() / 1e6;
        assertThat(ttftMs).as("mean TTFT, ms").isBetween(10.0, 1000.0);
        assertThat(tpotMs).as("mean TPOT, ms").isBetween(10.0, 100.0);
    }
}
