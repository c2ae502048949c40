package io.llmprof.streams.processor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.llmprof.events.Json;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.host.HostConfig;
import io.llmprof.streams.metrics.StreamsMeters;
import io.llmprof.streams.topology.StreamsAppConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;

/**
 * With a commit hook on their stores, the trace processors encode and put their state once per commit instead of
 * once per batch (issue 15), and nothing else changes: the same outputs, the same stored state after a commit, a
 * failed batch still all or nothing, a run leaving the live cache written first. Each case runs a write-through
 * processor (plain stores) beside a deferring one (the same stores under {@link CommitHookStore}); a commit is
 * {@code flushCache()} on a hooked store, as Kafka Streams calls it.
 */
class DeferredStateWritesTest {
    private static final SegmenterConfig CONFIG = SegmenterConfig.resolve(null, "generic", "anchor_kernel", 2);
    private static final String SOURCE = "rank0.json";

    /** A segmenter and a host processor over one set of stores, the segmenter's host feeds handed on by hand. */
    private static final class Chain {
        final MapStore<RunKey, RunState> runs = new MapStore<>("runs");
        final MapStore<RunKey, SegmenterState> segmenters = new MapStore<>("segmenters");
        final MapStore<RunKey, byte[]> host = new MapStore<>("host");
        final MockProcessorContext<String, Object> segmenterContext = new MockProcessorContext<>();
        final MockProcessorContext<String, Object> hostContext = new MockProcessorContext<>();
        final PassSegmenterProcessor segmenter;
        final HostProcessor hostProcessor;
        final CommitHookStore<RunKey, SegmenterState> hook;
        final List<String> outputs = new ArrayList<>();
        private int handedOn;
        private long ts = 1_000;

        Chain(boolean deferred, int maxStateBytes) {
            hook = deferred ? new CommitHookStore<>(segmenters) : null;
            var runsStore = deferred ? new CommitHookStore<>(runs) : runs;
            var hostStore = deferred ? new CommitHookStore<>(host) : host;
            for (MockProcessorContext<String, Object> c : List.of(segmenterContext, hostContext)) {
                c.addStateStore(runsStore);
                c.addStateStore(deferred ? hook : segmenters);
                c.addStateStore(hostStore);
            }
            StreamsMeters meters = new StreamsMeters(new SimpleMeterRegistry());
            segmenter = new PassSegmenterProcessor(
                    CONFIG,
                    meters,
                    "runs",
                    "segmenters",
                    new PassSegmenterProcessor.Sinks("passes", "layers", "anomalies", "host"),
                    Duration.ofSeconds(5),
                    Duration.ofSeconds(60),
                    Duration.ofHours(1),
                    maxStateBytes,
                    null,
                    "host");
            hostProcessor = new HostProcessor(
                    HostConfig.defaults(),
                    meters,
                    "host",
                    new HostProcessor.Sinks("steps", "verdicts", "anomalies"),
                    Duration.ofSeconds(5),
                    Duration.ofSeconds(60),
                    Duration.ofHours(1),
                    maxStateBytes,
                    "runs",
                    "segmenters");
            segmenter.init(segmenterContext);
            hostProcessor.init(hostContext);
        }

        void process(TraceBatch b) {
            segmenter.process(new Record<>(b.key(), b, ts));
            ts++; // a failed batch sent again comes with its own timestamp
            handOn();
        }

        /** A commit: the hook runs both processors' deferred writes (and the host feeds they cause). */
        void commit() {
            if (hook != null) {
                hook.flushCache();
                handOn();
                // the host processor's writes ran in the same flush, before the feeds above reached it: flush again
                hook.flushCache();
            }
        }

        private void handOn() {
            List<MockProcessorContext.CapturedForward<? extends String, ?>> fwd = segmenterContext.forwarded();
            for (; handedOn < fwd.size(); handedOn++) {
                var f = fwd.get(handedOn);
                if ("host".equals(f.childName().orElse(null))) {
                    hostProcessor.process(new Record<>(
                            f.record().key(), f.record().value(), f.record().timestamp()));
                } else {
                    outputs.add(line(f));
                }
            }
        }

        List<String> allOutputs() {
            List<String> all = new ArrayList<>(outputs);
            hostContext.forwarded().forEach(f -> all.add(line(f)));
            return all;
        }

        String state() {
            Map<String, String> hostState = new LinkedHashMap<>();
            host.snapshot().forEach((k, v) -> hostState.put(k.toString(), Arrays.toString(v)));
            return json(runs.snapshot()) + json(segmenters.snapshot()) + hostState;
        }
    }

    @Test
    void state_is_written_at_a_commit_not_per_batch_and_ends_as_written_through() {
        List<TraceBatch> batches = run("run", 12, false);
        Chain through = new Chain(false, StreamsAppConfig.DEFAULT_MAX_STATE_RECORD_BYTES);
        Chain deferred = new Chain(true, StreamsAppConfig.DEFAULT_MAX_STATE_RECORD_BYTES);
        for (TraceBatch b : batches) {
            through.process(b);
            deferred.process(b);
        }
        assertThat(through.segmenters.puts())
                .as("write-through: a put per changing batch")
                .isGreaterThan(5);
        assertThat(through.host.puts()).isGreaterThan(5);
        assertThat(deferred.segmenters.puts())
                .as("deferred: nothing before the commit")
                .isZero();
        assertThat(deferred.host.puts()).isZero();

        deferred.commit();
        assertThat(deferred.segmenters.puts()).isEqualTo(1);
        assertThat(deferred.host.puts()).isEqualTo(1);
        assertThat(deferred.state()).isEqualTo(through.state());
        assertThat(deferred.allOutputs()).isEqualTo(through.allOutputs()).hasSizeGreaterThan(10);
    }

    @Test
    void a_batch_failing_half_way_is_undone_by_replaying_the_uncommitted_ones() {
        List<TraceBatch> batches = run("run", 12, false);
        Chain through = new Chain(false, StreamsAppConfig.DEFAULT_MAX_STATE_RECORD_BYTES);
        batches.forEach(through::process);

        Chain deferred = new Chain(true, StreamsAppConfig.DEFAULT_MAX_STATE_RECORD_BYTES);
        batches.subList(0, 3).forEach(deferred::process);
        deferred.commit();
        batches.subList(3, 5).forEach(deferred::process);
        // The run store refuses the sixth batch after the segmenter took its events: the live segmenter must go
        // back to the committed state plus batches 4 and 5, not to the committed state alone (they would be lost)
        // and not keep the failed batch's events (they would count twice when it is sent again).
        deferred.runs.failWrites(true);
        assertThatThrownBy(() -> deferred.process(batches.get(5))).hasMessageContaining("refuses writes");
        deferred.runs.failWrites(false);
        batches.subList(5, batches.size()).forEach(deferred::process);
        deferred.commit();

        assertThat(deferred.allOutputs()).isEqualTo(through.allOutputs());
        assertThat(deferred.state()).isEqualTo(through.state());
    }

    @Test
    void a_run_leaving_the_live_cache_is_written_before_it_goes() {
        int runs = PassSegmenterProcessor.LIVE_SEGMENTERS + 2;
        Chain through = new Chain(false, StreamsAppConfig.DEFAULT_MAX_STATE_RECORD_BYTES);
        Chain deferred = new Chain(true, StreamsAppConfig.DEFAULT_MAX_STATE_RECORD_BYTES);
        for (int r = 0; r < runs; r++) {
            TraceBatch first = run("run-" + r, 3, false).get(1); // its first GPU batch
            through.process(first);
            deferred.process(first);
        }
        // two runs left the live cache of 64: both were written, none of the others yet
        assertThat(deferred.segmenters.snapshot()).hasSize(2);
        assertThat(deferred.segmenters.snapshot().keySet())
                .extracting(RunKey::run)
                .containsExactly("run-0", "run-1");
        // and the evicted runs go on from their written state
        for (int r = 0; r < 2; r++) {
            TraceBatch second = run("run-" + r, 3, false).get(3);
            through.process(second);
            deferred.process(second);
        }
        deferred.commit();
        assertThat(deferred.segmenters.snapshot()).hasSize(runs);
        assertThat(json(deferred.segmenters.snapshot())).isEqualTo(json(through.segmenters.snapshot()));
        assertThat(deferred.allOutputs()).isEqualTo(through.allOutputs());
    }

    @Test
    void a_state_over_the_cap_at_a_commit_is_capped_there_with_its_outputs() {
        // A small cap: the open pass grows over it within one commit interval.
        int cap = 600;
        List<TraceBatch> batches = run("run", 12, false);
        Chain through = new Chain(false, cap);
        batches.forEach(through::process);
        assertThat(through.allOutputs()).anyMatch(l -> l.contains("STATE_BOUND"));

        Chain deferred = new Chain(true, cap);
        batches.forEach(deferred::process);
        deferred.commit();
        List<String> capped = deferred.allOutputs();
        assertThat(capped).anyMatch(l -> l.contains("STATE_BOUND"));
        // every stored state is under the cap
        deferred.segmenters.snapshot().values().forEach(s -> assertThat(
                        io.llmprof.streams.boundary.SegmenterStateCodec.encode(s).length)
                .isLessThanOrEqualTo(cap));
        deferred.host.snapshot().values().forEach(b -> assertThat(b.length).isLessThanOrEqualTo(cap));
    }

    /** A run's host and GPU lanes, batch by batch (ending the trace or not): passes of 2 layers (an anchor each) and a gemm, each kernel with its launch. */
    private static List<TraceBatch> run(String run, int passes, boolean ends) {
        List<TraceEvent> gpu = new ArrayList<>();
        List<TraceEvent> host = new ArrayList<>();
        long t = 1_000_000;
        long correlation = 1;
        for (int p = 0; p < passes; p++) {
            for (String name : new String[] {"anchor_kernel", "gemm", "anchor_kernel", "gemm"}) {
                host.add(new TraceEvent(
                        TraceEvent.Kind.RUNTIME,
                        "cudaLaunchKernel",
                        t - 20_000,
                        5_000,
                        null,
                        null,
                        correlation,
                        null,
                        null));
                gpu.add(new TraceEvent(TraceEvent.Kind.KERNEL, name, t, 1_000 + p, 0, 7L, correlation, null, null));
                correlation++;
                t += 2_000;
            }
            t += 500_000;
        }
        List<TraceBatch> out = new ArrayList<>();
        int size = 7;
        for (int i = 0; i < gpu.size(); i += size) {
            boolean last = ends && i + size >= gpu.size();
            out.add(new TraceBatch(
                    "job",
                    run,
                    "0",
                    TraceBatch.Lane.HOST,
                    SOURCE,
                    i,
                    host.subList(i, Math.min(host.size(), i + size)),
                    last));
            out.add(new TraceBatch(
                    "job",
                    run,
                    "0",
                    TraceBatch.Lane.GPU,
                    SOURCE,
                    i,
                    gpu.subList(i, Math.min(gpu.size(), i + size)),
                    last));
        }
        return out;
    }

    private static String line(MockProcessorContext.CapturedForward<? extends String, ?> f) {
        return f.childName().orElse("?") + " " + f.record().key() + " "
                + json(f.record().value());
    }

    private static String json(Object value) {
        try {
            return Json.mapper().writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
