package io.llmprof.streams.topology;

import static io.llmprof.streams.topology.TopologyGoldenTest.assertSameJson;
import static io.llmprof.streams.topology.TopologyGoldenTest.gpuEvents;
import static io.llmprof.streams.topology.TopologyGoldenTest.rebatch;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.metrics.StreamsMeters;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Batches re-sent by an agent restarted from its checkpoint are never counted twice. */
class DeduplicationTest {
    @TempDir
    Path stateDir;

    private final Golden golden = Golden.load("five-passes");

    @Test
    void every_batch_sent_twice_gives_the_outputs_once() {
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            for (Golden.InputRecord r : golden.records()) {
                h.pipe(r);
                h.pipe(r);
            }
            assertSameJson(h.drainOutputs(), golden.expected());
            assertThat(h.count(StreamsMeters.DUPLICATES)).isEqualTo(30 + 3);
            assertThat(h.count(StreamsMeters.INGESTED, StreamsMeters.TAG_LANE, "gpu"))
                    .isEqualTo(30);
        }
    }

    @Test
    void a_resend_with_other_batch_boundaries_processes_only_the_new_events() {
        List<TraceEvent> events = gpuEvents(golden);
        TraceBatch like = golden.records().get(1).value();
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.pipe(golden.records().get(0)); // the host lane
            h.traceEvents.pipeInput(like.key(), rebatch(like, 0, events.subList(0, 14), false), 1_000L);
            // Restarted from a checkpoint at index 9: events 9..13 again, then new ones up to 19.
            h.traceEvents.pipeInput(like.key(), rebatch(like, 9, events.subList(9, 20), false), 2_000L);
            h.traceEvents.pipeInput(like.key(), rebatch(like, 20, events.subList(20, 30), true), 3_000L);

            assertSameJson(h.drainOutputs(), golden.expected());
            assertThat(h.count(StreamsMeters.DUPLICATES)).isEqualTo(5);
            assertThat(h.count(StreamsMeters.INGESTED, StreamsMeters.TAG_LANE, "gpu"))
                    .isEqualTo(30);
        }
    }

    @Test
    void a_resent_last_batch_after_the_end_of_trace_emits_nothing() {
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.pipe(golden.records());
            h.drainOutputs();
            Golden.InputRecord last = golden.records().get(golden.records().size() - 1);
            h.pipe(new Golden.InputRecord(last.key(), last.timestampMs() + 5_000, last.value()));

            assertThat(h.passes.isEmpty()).isTrue();
            assertThat(h.layers.isEmpty()).isTrue();
            assertThat(h.anomalies.isEmpty()).isTrue();
            assertThat(h.count(StreamsMeters.DUPLICATES))
                    .isEqualTo(last.value().events().size());
            assertThat(h.count(StreamsMeters.FLUSHES, StreamsMeters.TAG_REASON, "end_of_trace"))
                    .isEqualTo(1);
        }
    }

    @Test
    void new_events_of_a_run_that_already_ended_are_dropped_and_counted() {
        List<TraceEvent> events = gpuEvents(golden);
        TraceBatch like = golden.records().get(1).value();
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.pipe(golden.records());
            h.drainOutputs();
            h.traceEvents.pipeInput(like.key(), rebatch(like, 30, events.subList(0, 6), false), 10_000L);

            assertThat(h.passes.isEmpty()).isTrue();
            assertThat(h.count(StreamsMeters.DROPPED, StreamsMeters.TAG_REASON, "after_end_of_trace"))
                    .isEqualTo(6);
        }
    }

    @Test
    void a_gap_in_the_indexes_is_counted_as_missing_events() {
        List<TraceEvent> events = gpuEvents(golden);
        TraceBatch like = golden.records().get(1).value();
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.traceEvents.pipeInput(like.key(), rebatch(like, 0, events.subList(0, 10), false), 1_000L);
            h.traceEvents.pipeInput(like.key(), rebatch(like, 14, events.subList(14, 30), true), 2_000L);

            assertThat(h.count(StreamsMeters.MISSING)).isEqualTo(4);
            assertThat(h.count(StreamsMeters.DUPLICATES)).isZero();
            // a data-loss anomaly, so the dashboard counts it and LlmprofDataLossAnomalies fires (issue 18)
            List<io.llmprof.events.Anomaly> missing = h.anomalies.readValuesToList().stream()
                    .filter(a -> a.kind() == io.llmprof.events.AnomalyKind.EVENTS_MISSING)
                    .toList();
            assertThat(missing).singleElement().satisfies(a -> {
                assertThat(a.severity()).isEqualTo(io.llmprof.events.Severity.DATA_LOSS);
                assertThat(a.message()).startsWith("4 events of ").contains("(indexes 10..13)");
                assertThat(a.rank()).isEqualTo(like.rank());
            });
        }
    }

    @Test
    void indexes_are_tracked_per_source_and_lane() {
        TraceBatch gpu = golden.records().get(1).value();
        TraceBatch host = golden.records().get(0).value();
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            // Same firstIndex 0 on both lanes, and from a second source: none of them is a duplicate.
            h.traceEvents.pipeInput(host.key(), host, 1_000L);
            h.traceEvents.pipeInput(gpu.key(), gpu, 2_000L);
            TraceBatch otherSource = new TraceBatch(
                    host.job(), host.run(), host.rank(), host.lane(), "rank0.second.json", 0, host.events(), false);
            h.traceEvents.pipeInput(host.key(), otherSource, 3_000L);

            assertThat(h.count(StreamsMeters.DUPLICATES)).isZero();
            assertThat(h.count(StreamsMeters.INGESTED, StreamsMeters.TAG_LANE, "host"))
                    .isEqualTo(2 * host.events().size());
        }
    }
}
