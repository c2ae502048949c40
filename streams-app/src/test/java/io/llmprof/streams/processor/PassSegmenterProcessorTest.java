package io.llmprof.streams.processor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.llmprof.events.Json;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The processor keeps live segmenters between batches; the stores stay the truth. A failed batch, or a
 * processor initialized again over restored stores (a task revived after an aborted transaction, or moved),
 * must behave exactly as if there were no such cache.
 */
class PassSegmenterProcessorTest {
    private static final SegmenterConfig CONFIG = SegmenterConfig.resolve(null, "generic", "anchor_kernel", 2);
    private static final String SOURCE = "rank0.json";

    private final List<TraceBatch> gpuBatches = batches(TraceBatch.Lane.GPU, gpuEvents(12), 7);
    private MapStore<RunKey, RunState> runs;
    private MapStore<RunKey, SegmenterState> segmenters;
    private MockProcessorContext<String, Object> context;
    private PassSegmenterProcessor processor;

    @BeforeEach
    void setUp() {
        runs = new MapStore<>("runs");
        segmenters = new MapStore<>("segmenters");
        context = new MockProcessorContext<>();
        context.addStateStore(runs);
        context.addStateStore(segmenters);
        processor = newProcessor();
        processor.init(context);
    }

    private static PassSegmenterProcessor newProcessor() {
        return new PassSegmenterProcessor(
                CONFIG,
                new StreamsMeters(new SimpleMeterRegistry()),
                "runs",
                "segmenters",
                new PassSegmenterProcessor.Sinks("passes", "layers", "anomalies"),
                Duration.ofSeconds(5),
                Duration.ofSeconds(60),
                Duration.ofHours(1),
                StreamsAppConfig.DEFAULT_MAX_STATE_RECORD_BYTES,
                null);
    }

    @Test
    void a_failed_batch_leaves_both_stores_and_the_outputs_as_if_it_never_came() {
        List<String> expected = straightRun();

        process(gpuBatches.subList(0, 3));
        Map<RunKey, RunState> runsBefore = runs.snapshot();
        String segmenterBefore = json(segmenters.snapshot());
        segmenters.failWrites(true);
        assertThatThrownBy(() -> process(gpuBatches.get(3))).hasMessageContaining("refuses writes");
        segmenters.failWrites(false);

        assertThat(runs.snapshot()).isEqualTo(runsBefore);
        assertThat(json(segmenters.snapshot())).isEqualTo(segmenterBefore);
        // The agent re-sends it (or the next attempt succeeds): the run goes on from the stores' state.
        process(gpuBatches.subList(3, gpuBatches.size()));
        assertThat(forwarded()).isEqualTo(expected);
    }

    @Test
    void a_processor_initialized_again_over_restored_stores_forgets_its_live_segmenters() {
        List<String> expected = straightRun();

        process(gpuBatches.subList(0, 3));
        Map<RunKey, RunState> committedRuns = runs.snapshot();
        Map<RunKey, SegmenterState> committedSegmenters = segmenters.snapshot();
        List<String> committedOutputs = forwarded();
        // Processed, then the transaction aborted: the task is closed dirty, its stores restored from the
        // changelog (the state of the last commit), and the same processor initialized again.
        process(gpuBatches.subList(3, 6));
        processor.close();
        runs.restore(committedRuns);
        segmenters.restore(committedSegmenters);
        context.resetForwards();
        processor.init(context);

        process(gpuBatches.subList(3, gpuBatches.size()));
        List<String> all = new ArrayList<>(committedOutputs);
        all.addAll(forwarded());
        assertThat(all).isEqualTo(expected);
    }

    @Test
    void a_host_lane_batch_feeds_the_segmenter_all_or_nothing() {
        process(gpuBatches.get(0));
        Map<RunKey, RunState> runsBefore = runs.snapshot();
        String segmenterBefore = json(segmenters.snapshot());
        segmenters.failWrites(true);
        TraceBatch host = new TraceBatch(
                "job",
                "run",
                "0",
                TraceBatch.Lane.HOST,
                SOURCE,
                0,
                List.of(new TraceEvent(TraceEvent.Kind.RUNTIME, "cudaLaunchKernel", 1, 1, null, 9L, 5L, null, null)),
                false);
        assertThatThrownBy(() -> process(host)).hasMessageContaining("refuses writes");
        assertThat(runs.snapshot()).isEqualTo(runsBefore);
        assertThat(json(segmenters.snapshot())).isEqualTo(segmenterBefore);

        segmenters.failWrites(false);
        process(host);
        assertThat(runs.get(RunKey.of(host)).next(SOURCE, TraceBatch.Lane.HOST)).isEqualTo(1);
        assertThat(segmenters.get(RunKey.of(host)).steps().traceStartNs()).isEqualTo(1);
    }

    /** Outputs of all batches through a fresh processor with fresh stores, nothing going wrong. */
    private List<String> straightRun() {
        MockProcessorContext<String, Object> c = new MockProcessorContext<>();
        c.addStateStore(new MapStore<RunKey, RunState>("runs"));
        c.addStateStore(new MapStore<RunKey, SegmenterState>("segmenters"));
        PassSegmenterProcessor p = newProcessor();
        p.init(c);
        long ts = 1_000;
        for (TraceBatch b : gpuBatches) {
            p.process(new Record<>(b.key(), b, ts++));
        }
        List<String> out = forwarded(c);
        assertThat(out).as("the scenario closes passes").hasSizeGreaterThan(10);
        return out;
    }

    private long ts = 1_000;

    private void process(List<TraceBatch> batches) {
        batches.forEach(this::process);
    }

    private void process(TraceBatch b) {
        processor.process(new Record<>(b.key(), b, ts++));
    }

    private List<String> forwarded() {
        return forwarded(context);
    }

    private static List<String> forwarded(MockProcessorContext<String, Object> c) {
        return c.forwarded().stream()
                .map(f -> f.childName().orElse("?") + " " + f.record().key() + " "
                        + json(f.record().value()))
                .toList();
    }

    /** Passes of 2 layers (one anchor each) and a gemm, a host gap between passes. */
    private static List<TraceEvent> gpuEvents(int passes) {
        List<TraceEvent> events = new ArrayList<>();
        long t = 1_000_000;
        for (int p = 0; p < passes; p++) {
            for (String name : new String[] {"anchor_kernel", "gemm", "anchor_kernel", "gemm"}) {
                events.add(TraceEvent.kernel(name, t, 1_000 + p, 0, 7));
                t += 2_000;
            }
            t += 500_000;
        }
        return events;
    }

    private static List<TraceBatch> batches(TraceBatch.Lane lane, List<TraceEvent> events, int size) {
        List<TraceBatch> out = new ArrayList<>();
        for (int i = 0; i < events.size(); i += size) {
            List<TraceEvent> chunk = events.subList(i, Math.min(events.size(), i + size));
            out.add(new TraceBatch("job", "run", "0", lane, SOURCE, i, chunk, i + size >= events.size()));
        }
        return out;
    }

    private static String json(Object value) {
        try {
            return Json.mapper().writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
