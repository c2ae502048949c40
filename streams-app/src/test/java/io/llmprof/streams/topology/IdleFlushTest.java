package io.llmprof.streams.topology;

import static io.llmprof.streams.topology.TopologyGoldenTest.gpuEvents;
import static io.llmprof.streams.topology.TopologyGoldenTest.rebatch;
import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.processor.RunKey;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The stream-time punctuator closes ranks that went quiet, and forgets runs long gone. */
class IdleFlushTest {
    private static final long T0 = 1_767_225_600_000L;

    @TempDir
    Path stateDir;

    private final Golden golden = Golden.load("five-passes");
    private final List<TraceEvent> events = gpuEvents(golden);
    private final TraceBatch like = golden.records().get(1).value();

    /** Stream time moves with any record of the task: here rank 1's, with no events. */
    private static void tick(Harness h, long timestampMs) {
        TraceBatch other =
                new TraceBatch("llama-test", "trace-0", "1", TraceBatch.Lane.HOST, "rank1.json", 0, List.of(), false);
        h.traceEvents.pipeInput(other.key(), other, timestampMs);
    }

    @Test
    void a_rank_quiet_for_less_than_the_timeout_keeps_its_pass_open() {
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.traceEvents.pipeInput(like.key(), rebatch(like, 0, events, false), T0);
            assertThat(h.passes.readValuesToList()).hasSize(4);

            tick(h, T0 + 59_000);
            assertThat(h.passes.isEmpty()).isTrue();

            tick(h, T0 + 60_000);
            List<TestRecord<String, PassRecord>> flushed = h.passes.readRecordsToList();
            assertThat(flushed).hasSize(1);
            assertThat(flushed.get(0).value().index()).isEqualTo(4);
            assertThat(flushed.get(0).value().closedBy()).isEqualTo("idle");
            assertThat(flushed.get(0).value().complete()).isTrue();
            assertThat(flushed.get(0).timestamp()).isEqualTo(T0 + 60_000);
            assertThat(h.count(StreamsMeters.FLUSHES, StreamsMeters.TAG_REASON, "idle"))
                    .isEqualTo(1);
        }
    }

    @Test
    void the_idle_timeout_is_configurable() {
        try (Harness h = new Harness(stateDir, golden.segmenter(), b -> b.idleTimeout(Duration.ofSeconds(10)))) {
            h.traceEvents.pipeInput(like.key(), rebatch(like, 0, events, false), T0);
            h.passes.readValuesToList();
            tick(h, T0 + 10_000);
            assertThat(h.passes.readValuesToList())
                    .extracting(PassRecord::closedBy)
                    .containsExactly("idle");
        }
    }

    @Test
    void an_idle_flush_happens_once_and_a_rank_that_resumes_goes_on_numbering_its_passes() {
        try (Harness h = new Harness(stateDir, golden.segmenter())) {
            h.traceEvents.pipeInput(like.key(), rebatch(like, 0, events.subList(0, 27), false), T0);
            tick(h, T0 + 61_000);
            tick(h, T0 + 200_000);
            assertThat(h.passes.readValuesToList())
                    .extracting(PassRecord::index, PassRecord::closedBy)
                    .last()
                    .isEqualTo(org.assertj.core.groups.Tuple.tuple(4L, "idle"));
            assertThat(h.count(StreamsMeters.FLUSHES, StreamsMeters.TAG_REASON, "idle"))
                    .isEqualTo(1);

            // The rank comes back with one more pass (the same 6 events, 500 us later) and ends.
            List<TraceEvent> more = events.subList(0, 6).stream()
                    .map(e -> new TraceEvent(
                            e.kind(),
                            e.name(),
                            e.startNs() + 500_000,
                            e.durNs(),
                            e.device(),
                            e.stream(),
                            e.correlation(),
                            e.externalId(),
                            e.inputDims()))
                    .toList();
            h.traceEvents.pipeInput(like.key(), rebatch(like, 27, more, true), T0 + 201_000);
            assertThat(h.passes.readValuesToList())
                    .extracting(PassRecord::index, PassRecord::closedBy, PassRecord::complete)
                    .containsExactly(org.assertj.core.groups.Tuple.tuple(5L, "end_of_trace", true));
        }
    }

    @Test
    void runs_are_forgotten_after_the_retention_but_never_while_a_pass_is_open() {
        try (Harness h = new Harness(stateDir, golden.segmenter(), b -> b.stateRetention(Duration.ofMinutes(10)))) {
            h.pipe(golden.records()); // ends with end of trace
            RunKey ended = new RunKey("llama-test", "0", "trace-0");
            TraceBatch open = rebatch(
                    new TraceBatch("llama-test", "trace-1", "0", TraceBatch.Lane.GPU, "b.json", 0, List.of(), false),
                    0,
                    events.subList(0, 4),
                    false);
            long last = golden.records().get(golden.records().size() - 1).timestampMs();
            h.traceEvents.pipeInput(
                    open.key(), open, last + Duration.ofMinutes(5).toMillis());
            assertThat(h.runStore().get(ended)).isNotNull();

            tick(h, last + Duration.ofMinutes(10).toMillis() - 1);
            assertThat(h.runStore().get(ended)).isNotNull();
            tick(h, last + Duration.ofMinutes(10).toMillis() + 5_000);
            assertThat(h.runStore().get(ended)).isNull();
            // trace-1 was flushed idle, and stays until its own retention passes.
            RunKey later = new RunKey("llama-test", "0", "trace-1");
            assertThat(h.runStore().get(later).pending()).isFalse();
            assertThat(h.segmenterStore().get(later))
                    .as("kept for pass numbering")
                    .isNotNull();
            tick(h, last + Duration.ofMinutes(15).toMillis() + 5_000);
            assertThat(h.runStore().get(later)).isNull();
            assertThat(h.segmenterStore().get(later)).isNull();
        }
    }
}
