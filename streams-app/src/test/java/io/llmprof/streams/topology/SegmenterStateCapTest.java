package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.boundary.SegmenterStateCodec;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.processor.RunKey;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The segmenter's and host tracker's states are never written over the cap: kernels that never match the anchor
 * pile up in the open pass until the cap closes it early (as an idle flush would), the host tracker restarts, each
 * with a STATE_BOUND anomaly, and the rank goes on.
 */
class SegmenterStateCapTest {
    private static final long T0 = 1_767_225_600_000L;
    private static final int CAP = StreamsAppConfig.MIN_STATE_RECORD_BYTES;

    @TempDir
    Path stateDir;

    private static List<TraceEvent> kernels(int from, int count) {
        List<TraceEvent> out = new ArrayList<>();
        for (int i = from; i < from + count; i++) {
            out.add(new TraceEvent(
                    TraceEvent.Kind.KERNEL, "gemm_kernel_" + (i % 7), i * 10_000L, 5_000L, 0, 7L, null, null, null));
        }
        return out;
    }

    @Test
    void an_open_pass_and_host_windows_that_outgrow_the_cap_are_cut_down_and_the_rank_goes_on() {
        Golden golden = Golden.load("five-passes");
        try (Harness h = new Harness(stateDir, golden.segmenter(), b -> b.maxStateRecordBytes(CAP))) {
            TraceBatch first = new TraceBatch("job", "run", "0", TraceBatch.Lane.GPU, "f", 0, kernels(0, 3_000), false);
            h.traceEvents.pipeInput(first.key(), first, T0);
            RunKey key = RunKey.of(first);
            SegmenterState stored = h.segmenterStore().get(key);
            assertThat(stored).as("kept after its open pass was closed").isNotNull();
            assertThat(SegmenterStateCodec.encode(stored).length).isLessThanOrEqualTo(CAP);
            List<Anomaly> bound = h.anomalies.readValuesToList().stream()
                    .filter(a -> a.kind() == AnomalyKind.STATE_BOUND)
                    .toList();
            // the segmenter's open pass, and the host tracker fed the same kernels
            assertThat(bound)
                    .extracting(Anomaly::message)
                    .satisfiesExactlyInAnyOrder(
                            m -> assertThat(m)
                                    .contains("segmenter state of job/0 run run", "over the cap of " + CAP)
                                    .contains("the open pass is closed early"),
                            m -> assertThat(m)
                                    .contains("host state of job/0 run run", "over the cap of " + CAP)
                                    .contains("host tracker restarts"));
            assertThat(h.count(StreamsMeters.STATE_CAPPED, StreamsMeters.TAG_STORE, "segmenter"))
                    .isEqualTo(1);
            assertThat(h.count(StreamsMeters.STATE_CAPPED, StreamsMeters.TAG_STORE, "host"))
                    .isEqualTo(1);
            byte[] host = h.driver
                    .<RunKey, byte[]>getKeyValueStore(TopologyFactory.HOST_STORE)
                    .get(key);
            assertThat(host == null ? 0 : host.length).isLessThanOrEqualTo(CAP);

            TraceBatch next =
                    new TraceBatch("job", "run", "0", TraceBatch.Lane.GPU, "f", 3_000, kernels(3_000, 100), false);
            h.traceEvents.pipeInput(next.key(), next, T0 + 1_000);
            assertThat(h.count(StreamsMeters.INGESTED, StreamsMeters.TAG_LANE, "gpu"))
                    .isEqualTo(3_100);
            assertThat(h.dlq.readRecordsToList()).isEmpty();
            SegmenterState after = h.segmenterStore().get(key);
            assertThat(after).isNotNull();
            assertThat(SegmenterStateCodec.encode(after).length).isLessThanOrEqualTo(CAP);
        }
    }
}
