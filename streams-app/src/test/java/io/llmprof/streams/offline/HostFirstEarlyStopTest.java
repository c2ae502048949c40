package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
import io.llmprof.agent.synth.TraceLayout;
import io.llmprof.events.Json;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.support.SharedData;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A host-first Kineto file (as Kineto and synth write them) whose host lane runs more launches ahead of its kernels
 * than the launch context holds is read again sorted (ExactOrder). The first reading stops at the first lost launch
 * instead of reading the whole file for an analysis that is thrown away: `analyze layers` of a 140 MB synth trace
 * took 2.8 CPU s, 2.2 after this (docs/benchmarks.md).
 */
class HostFirstEarlyStopTest {
    @TempDir
    Path tmp;

    @Test
    void theFirstReadingOfAHostFirstFileStopsAtTheFirstLostLaunch() throws Exception {
        Path config = SharedData.file("model-configs/Qwen--Qwen3-8B_config.json");
        // 60 passes of ~510 kernels: ~30k launches, beyond the 16,384 the launch context holds
        SynthResult synth = SynthTrace.write(
                SynthSpec.builder(config).passes(60).ranks(1).seed(3).build(), tmp);
        Path trace = synth.files().get(0);
        SegmenterConfig segmenterConfig = SegmenterConfig.resolve(config, null, null, null);

        long[] total = new long[1];
        KinetoReader.read(trace, ReaderOptions.defaults(), counting(total, null));
        long[] delivered = new long[1];
        ExactOrder order = new ExactOrder();
        RankSegmenters segmenters =
                new RankSegmenters(r -> new PassSegmenter(segmenterConfig, "j", "r", r), (rank, emitted) -> {});
        segmenters.onLaunchLost(order::sortedOnLostLaunch);
        assertThatThrownBy(() -> KinetoReader.read(trace, ReaderOptions.defaults(), counting(delivered, segmenters)))
                .isInstanceOf(ExactOrder.ReadSorted.class)
                .hasMessageContaining("kernel launches were lost");
        assertThat(total[0]).isGreaterThan(80_000);
        // the host lane comes first: it stops after the 16,384 launches the context holds and a kernel or so
        assertThat(delivered[0]).isLessThan(total[0] / 2);
        order.close();
    }

    /**
     * `analyze layers` reads the lanes interleaved by time, so the same host-first file loses no launch and is read
     * once, with the results of the sorted reading (here: of the same run written with the runtime calls among the
     * GPU records, which is read sorted because its host lane is out of order beyond the reorder window).
     */
    @Test
    void analyzeLayersReadsAHostFirstFileOnceWithTheSortedReadingsResults() throws Exception {
        Path config = SharedData.file("model-configs/Qwen--Qwen3-8B_config.json");
        // 170 passes: more than 65,536 cpu_ops, so the runtime calls among the GPU records are beyond the reorder
        // window (about 440 cpu_ops and annotations per pass)
        SynthSpec.Builder spec = SynthSpec.builder(config).passes(170).ranks(1).seed(3);
        Path hostFirst = SynthTrace.write(spec.build(), tmp.resolve("host-first"))
                .files()
                .get(0);
        Path sorted = SynthTrace.write(spec.layout(TraceLayout.KINETO).build(), tmp.resolve("kineto"))
                .files()
                .get(0);

        JsonNode once = layers(hostFirst, config);
        JsonNode twice = layers(sorted, config);
        assertThat(once.get("notices"))
                .extracting(JsonNode::asText)
                .containsExactly("profile generic chosen from Qwen--Qwen3-8B_config.json");
        assertThat(twice.get("notices"))
                .extracting(JsonNode::asText)
                .anyMatch(n -> n.contains("read again with every lane sorted on disk"));
        assertThat(once.get("ranks").get(0).get("passes")).hasSize(170);
        assertThat(once.get("ranks")).isEqualTo(twice.get("ranks"));
        assertThat(once.get("cross_rank")).isEqualTo(twice.get("cross_rank"));
    }

    private static JsonNode layers(Path trace, Path config) throws Exception {
        AnalyzeLayersCommandTest.Out o = AnalyzeLayersCommandTest.analyze(
                "layers", "--trace", trace.toString(), "--config", config.toString(), "--format", "json");
        assertThat(o.code()).as(o.err()).isZero();
        return Json.mapper().readTree(o.out());
    }

    private static OrderedSink counting(long[] count, RankSegmenters segmenters) {
        return new OrderedSink() {
            @Override
            public void event(String rank, TraceBatch.Lane lane, long index, TraceEvent e) {
                count[0]++;
                if (segmenters != null) {
                    segmenters.event(rank, lane, e);
                }
            }

            @Override
            public void endOfTrace(String rank, TraceBatch.Lane lane) {}
        };
    }
}
