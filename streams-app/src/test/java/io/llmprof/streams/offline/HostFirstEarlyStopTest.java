package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.agent.kineto.KinetoReader;
import io.llmprof.agent.kineto.OrderedSink;
import io.llmprof.agent.kineto.ReaderOptions;
import io.llmprof.agent.synth.SynthResult;
import io.llmprof.agent.synth.SynthSpec;
import io.llmprof.agent.synth.SynthTrace;
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
