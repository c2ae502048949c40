package io.llmprof.streams.topology;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.metrics.StreamsMeters;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Input batches -> exact passes, layers and anomalies, against golden files derived from the rules. */
class TopologyGoldenTest {
    @TempDir
    Path stateDir;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"five-passes", "idle-flush", "two-runs", "marker-steps"})
    void golden_input_gives_exactly_the_expected_outputs(String name) {
        Golden golden = Golden.load(name);
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.pipe(golden.records());
            assertSameJson(h.drainOutputs(), golden.expected());
        }
    }

    @ParameterizedTest(name = "batches of {0} events")
    @ValueSource(ints = {1, 2, 5, 6, 13, 30})
    void batching_does_not_change_the_outputs(int batchSize) {
        Golden golden = Golden.load("five-passes");
        List<TraceEvent> events = gpuEvents(golden);
        TraceBatch first = golden.records().get(1).value();
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.pipe(golden.records().subList(0, 1)); // the host lane (its first event sets the trace start)
            long ts = 1_000;
            for (int i = 0; i < events.size(); i += batchSize) {
                List<TraceEvent> chunk = events.subList(i, Math.min(events.size(), i + batchSize));
                boolean last = i + batchSize >= events.size();
                h.traceEvents.pipeInput(first.key(), rebatch(first, i, chunk, last), ts++);
            }
            ObjectNode out = h.drainOutputs();
            assertSameJson(out, golden.expected());
        }
    }

    @Test
    void ingested_events_are_counted_per_lane_and_the_end_of_trace_flush_once() {
        Golden golden = Golden.load("five-passes");
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.pipe(golden.records());
            assertThat(h.count(StreamsMeters.INGESTED, StreamsMeters.TAG_LANE, "gpu"))
                    .isEqualTo(30);
            assertThat(h.count(StreamsMeters.INGESTED, StreamsMeters.TAG_LANE, "host"))
                    .isEqualTo(3);
            assertThat(h.count(StreamsMeters.DUPLICATES)).isZero();
            assertThat(h.count(StreamsMeters.FLUSHES, StreamsMeters.TAG_REASON, "end_of_trace"))
                    .isEqualTo(1);
        }
    }

    @Test
    void with_markers_the_gpu_lane_waits_for_a_late_host_lane_and_flushes_once_when_it_ends() {
        Golden golden = Golden.load("marker-steps");
        List<Golden.InputRecord> records = golden.records();
        int firstLateHost = 0; // the first host record after the GPU lane's
        while (records.get(firstLateHost).value().lane() == TraceBatch.Lane.HOST) {
            firstLateHost++;
        }
        while (records.get(firstLateHost).value().lane() == TraceBatch.Lane.GPU) {
            firstLateHost++;
        }
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.pipe(records.subList(0, firstLateHost));
            // the whole GPU lane and its end arrived: nothing can be cut before the host lane says where steps are
            assertThat(h.passes.isEmpty()).isTrue();
            assertThat(h.count(StreamsMeters.FLUSHES, StreamsMeters.TAG_REASON, "end_of_trace"))
                    .isZero();
            h.pipe(records.subList(firstLateHost, records.size()));
            assertSameJson(h.drainOutputs(), golden.expected());
            assertThat(h.count(StreamsMeters.FLUSHES, StreamsMeters.TAG_REASON, "end_of_trace"))
                    .isEqualTo(1);
            // the run is finished: its segmenter state is gone
            try (var it = h.segmenterStore().all()) {
                assertThat(it.hasNext()).isFalse();
            }
        }
    }

    @Test
    void a_gpu_lane_that_ends_before_any_host_event_is_cut_by_anchors() {
        Golden golden = Golden.load("marker-steps");
        List<Golden.InputRecord> gpuFirst = new ArrayList<>();
        golden.records().stream()
                .filter(r -> r.value().lane() == TraceBatch.Lane.GPU)
                .forEach(gpuFirst::add);
        golden.records().stream()
                .filter(r -> r.value().lane() == TraceBatch.Lane.HOST)
                .forEach(gpuFirst::add);
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.pipe(gpuFirst);
            ObjectNode out = h.drainOutputs();
            // no host event was seen when the GPU lane ended: the rank is GPU-only as far as anyone can tell
            assertThat(out.get("passes")).hasSize(5);
            out.get("passes").forEach(p -> {
                assertThat(p.at("/value/boundary").asText()).isEqualTo("anchor");
                assertThat(p.at("/value/phase").isMissingNode()).isTrue();
            });
        }
    }

    static List<TraceEvent> gpuEvents(Golden golden) {
        List<TraceEvent> events = new ArrayList<>();
        golden.records().stream()
                .map(Golden.InputRecord::value)
                .filter(b -> b.lane() == TraceBatch.Lane.GPU)
                .forEach(b -> events.addAll(b.events()));
        return events;
    }

    static TraceBatch rebatch(TraceBatch like, long firstIndex, List<TraceEvent> events, boolean endOfTrace) {
        return new TraceBatch(
                like.job(), like.run(), like.rank(), like.lane(), like.source(), firstIndex, events, endOfTrace);
    }

    static void assertSameJson(JsonNode actual, JsonNode expected) {
        if (!actual.equals(expected)) {
            // Text comparison only to show a readable diff.
            assertThat(Harness.pretty(actual)).isEqualTo(Harness.pretty(expected));
        }
        assertThat(actual).isEqualTo(expected);
    }
}
