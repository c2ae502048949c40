package io.llmprof.streams.processor;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.LayerRecord;
import io.llmprof.events.RankKey;
import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.ClosedPass;
import io.llmprof.streams.boundary.Emitted;
import io.llmprof.streams.boundary.PassSegmenter;
import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.boundary.SegmenterState;
import io.llmprof.streams.boundary.SegmenterStateCodec;
import io.llmprof.streams.metrics.StreamsMeters;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Adapts the per-rank {@link PassSegmenter} to Kafka Streams: per (job, rank, run) a small run-store entry
 * (cursors, clocks; touched by every batch) and a segmenter-store entry (written when a batch changed it: GPU
 * batches, and host batches with step markers, launches, or the rank's first events),
 * de-duplication by (source, lane) index, and a stream-time punctuator that closes idle ranks.
 *
 * <p>A record is all or nothing: the store is written and outputs are forwarded only after every event of
 * the batch went through the segmenter. A record that throws leaves the state as it was and goes to the
 * dead-letter topic through the processing exception handler.
 *
 * <p>A segmenter state is never written over {@code maxStateBytes} encoded: its open pass is closed first, as an
 * idle flush would, and if that is not enough the run's segmenter restarts (a STATE_BOUND anomaly either way).
 * A changelog record Kafka refuses kills the stream thread, and its replacement meets the same record.
 */
public final class PassSegmenterProcessor implements Processor<String, TraceBatch, String, Object> {
    private static final Logger LOG = LoggerFactory.getLogger(PassSegmenterProcessor.class);

    /**
     * Names of the children this processor forwards to.
     *
     * @param host the host-overhead child that gets a {@link HostFeed} per record, or null for none
     */
    public record Sinks(String passes, String layers, String anomalies, String host) {
        public Sinks {
            Objects.requireNonNull(passes, "passes");
            Objects.requireNonNull(layers, "layers");
            Objects.requireNonNull(anomalies, "anomalies");
        }

        public Sinks(String passes, String layers, String anomalies) {
            this(passes, layers, anomalies, null);
        }
    }

    /** Live segmenters kept per task; beyond this many runs the least recently used is reloaded when needed. */
    static final int LIVE_SEGMENTERS = 64;

    private final SegmenterConfig segmenterConfig;
    private final StreamsMeters meters;
    private final String runStoreName;
    private final String segmenterStoreName;
    private final Sinks sinks;
    private final Duration punctuationInterval;
    private final long idleTimeoutMs;
    private final long retentionMs;
    private final int maxStateBytes;
    /** The segmenter store's serde, to encode a state once for both its size check and its put; null: none. */
    private final SegmenterStateSerde stateSerde;

    /**
     * The segmenters of the stores' latest values, so a batch does not decode the state the previous batch
     * wrote. The stores stay the truth: every batch still writes them (exactly-once needs the write in the
     * same transaction as the outputs), an entry is dropped whenever processing fails (its object may be
     * half-way through a batch), and the whole map is dropped on init and close (a task revived after a
     * failed commit, or moved, restores its stores and must not see what this instance had).
     */
    private final Map<RunKey, PassSegmenter> live = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<RunKey, PassSegmenter> eldest) {
            return size() > LIVE_SEGMENTERS;
        }
    };

    private ProcessorContext<String, Object> context;
    private KeyValueStore<RunKey, RunState> runs;
    private KeyValueStore<RunKey, SegmenterState> segmenters;

    /** @param stateSerde the segmenter store's value serde (see {@link SegmenterStateSerde#encodeForPut}), or null */
    public PassSegmenterProcessor(
            SegmenterConfig segmenterConfig,
            StreamsMeters meters,
            String runStoreName,
            String segmenterStoreName,
            Sinks sinks,
            Duration punctuationInterval,
            Duration idleTimeout,
            Duration retention,
            int maxStateBytes,
            SegmenterStateSerde stateSerde) {
        this.stateSerde = stateSerde;
        if (maxStateBytes < 1) {
            throw new IllegalArgumentException("maxStateBytes must be positive, got " + maxStateBytes);
        }
        this.maxStateBytes = maxStateBytes;
        this.segmenterConfig = Objects.requireNonNull(segmenterConfig, "segmenterConfig");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.runStoreName = Objects.requireNonNull(runStoreName, "runStoreName");
        this.segmenterStoreName = Objects.requireNonNull(segmenterStoreName, "segmenterStoreName");
        this.sinks = Objects.requireNonNull(sinks, "sinks");
        this.punctuationInterval = Objects.requireNonNull(punctuationInterval, "punctuationInterval");
        this.idleTimeoutMs = idleTimeout.toMillis();
        this.retentionMs = retention.toMillis();
    }

    @Override
    public void init(ProcessorContext<String, Object> context) {
        live.clear();
        this.context = context;
        this.runs = context.getStateStore(runStoreName);
        this.segmenters = context.getStateStore(segmenterStoreName);
        context.schedule(punctuationInterval, PunctuationType.STREAM_TIME, this::punctuate);
    }

    @Override
    public void close() {
        live.clear();
    }

    @Override
    public void process(Record<String, TraceBatch> record) {
        TraceBatch batch = record.value();
        if (batch == null) {
            throw new IllegalArgumentException("trace batch without a value (key " + record.key() + ")");
        }
        if (!batch.key().equals(record.key())) {
            // The record key decides the partition, so the task that owns this rank's state: a batch
            // under another key would be segmented out of order with the rest of its rank.
            throw new IllegalArgumentException(
                    "record key " + record.key() + " does not match the batch's rank key " + batch.key());
        }
        RunKey key = RunKey.of(batch);
        RunState prior = runs.get(key);
        RunState state = (prior == null ? RunState.fresh() : prior).seen(batch.lane(), record.timestamp());

        long next = state.next(batch.source(), batch.lane());
        int size = batch.events().size();
        IndexGap.check(next, batch.firstIndex(), size, key.rankKey() + " " + batch.lane() + " from " + batch.source());
        int skip = (int) Math.min(size, Math.max(0, next - batch.firstIndex()));
        long missing = Math.max(0, batch.firstIndex() - next);
        List<TraceEvent> fresh = batch.events().subList(skip, size);
        state = state.withNext(batch.source(), batch.lane(), Math.max(next, batch.firstIndex() + size));

        List<Emitted> out = new ArrayList<>();
        long ingested = 0;
        long droppedAfterEnd = 0;
        boolean finished = false;
        boolean flushed = false;
        PassSegmenter segmenter = null;
        long modCount = 0;
        try {
            if (batch.lane() == TraceBatch.Lane.HOST) {
                // Host events feed the step markers. After the run ended they matter only while the segmenter
                // still waits for the host lane (its state is then still stored).
                ingested = fresh.size();
                segmenter = state.ended() ? waitingSegmenter(key) : segmenter(key, batch);
                if (segmenter != null) {
                    modCount = segmenter.modCount();
                    accept(segmenter, fresh, out);
                    if (batch.endOfTrace()) {
                        out.add(segmenter.hostEnded());
                    }
                    if (state.ended() && !segmenter.awaitingHost()) {
                        finished = true;
                        flushed = true;
                        state = state.withPending(false);
                    }
                }
            } else if (state.ended()) {
                droppedAfterEnd = fresh.size();
            } else {
                segmenter = segmenter(key, batch);
                modCount = segmenter.modCount();
                accept(segmenter, fresh, out);
                ingested = fresh.size();
                if (batch.endOfTrace()) {
                    out.add(segmenter.endOfTrace(PassSegmenter.END_OF_TRACE));
                    // Still waiting for the host lane: keep the state; the host lane's end (or an idle flush)
                    // finishes the run.
                    state = state.markEnded().withPending(segmenter.awaitingHost());
                    finished = !segmenter.awaitingHost();
                    flushed = finished;
                } else {
                    state = state.withPending(state.pending() || !fresh.isEmpty());
                }
            }
            runs.put(key, state);
        } catch (RuntimeException e) {
            // The live object may be half-way through this batch; the stores still hold the state before it.
            live.remove(key);
            throw e;
        }
        if (segmenter != null) {
            try {
                if (finished) {
                    live.remove(key);
                    segmenters.delete(key);
                } else if (segmenter.modCount() != modCount) {
                    putCapped(key, segmenter, out);
                }
            } catch (RuntimeException e) {
                // Two stores, one record: undo the run store's write so that neither moved.
                live.remove(key);
                if (prior == null) {
                    runs.delete(key);
                } else {
                    runs.put(key, prior);
                }
                throw e;
            }
        }
        for (Emitted emitted : out) {
            forward(emitted, record.timestamp(), key);
        }
        boolean noPasses =
                out.stream().flatMap(e -> e.anomalies().stream()).anyMatch(a -> a.kind() == AnomalyKind.NO_ANCHOR);
        List<io.llmprof.events.PassRecord> closedPasses = passes(out);
        boolean fed = ingested > 0;
        if (sinks.host() != null && (fed || !closedPasses.isEmpty() || noPasses || batch.endOfTrace())) {
            send(
                    sinks.host(),
                    key.rankKey(),
                    new HostFeed(
                            key,
                            batch.lane(),
                            fed ? fresh : List.of(),
                            closedPasses,
                            noPasses,
                            batch.endOfTrace(),
                            false),
                    record.timestamp());
        }
        meters.ingested(batch.lane(), ingested);
        meters.duplicates(skip);
        if (missing > 0) {
            meters.missing(missing);
            String what = missing + " events of " + key.rankKey() + " lane " + batch.lane() + " run " + batch.run()
                    + " source " + batch.source() + " never arrived (indexes " + next + ".." + (batch.firstIndex() - 1)
                    + ")";
            LOG.warn("{}", what);
            // Counted where the dashboard counts anomalies, so the data-loss alert fires (issue 18).
            send(
                    sinks.anomalies(),
                    key.rankKey(),
                    new Anomaly(
                            key.job(),
                            key.rank(),
                            AnomalyKind.EVENTS_MISSING,
                            what + ": the passes around them are incomplete, later ones may be renumbered;"
                                    + " docs/runbook.md \"Events missing\"",
                            "run " + key.run()),
                    record.timestamp());
        }
        if (droppedAfterEnd > 0) {
            meters.droppedAfterEnd(droppedAfterEnd);
            LOG.warn(
                    "dropped {} GPU events of {} run {} source {}: that run already ended",
                    droppedAfterEnd,
                    key.rankKey(),
                    batch.run(),
                    batch.source());
        }
        if (flushed) {
            meters.flushed(StreamsMeters.FlushReason.END_OF_TRACE);
        }
    }

    /**
     * Writes the segmenter's state when it is under the cap encoded. Over it, the open pass is closed as an idle
     * flush would (the pass goes out through {@code out}); still over, the run's segmenter state is dropped and
     * restarts with the next batch. Either way a STATE_BOUND anomaly goes to {@code out}.
     */
    private void putCapped(RunKey key, PassSegmenter segmenter, List<Emitted> out) {
        SegmenterState state = segmenter.state();
        int size = encodedSize(state);
        if (size <= maxStateBytes) {
            put(key, state);
            return;
        }
        meters.stateCapped(StreamsMeters.StateStore.SEGMENTER);
        String why = "segmenter state of " + key.rankKey() + " run " + key.run() + " grew to " + size
                + " bytes, over the cap of " + maxStateBytes + " ("
                + state.open().size() + " open rows, "
                + state.warmup().size() + " warm-up rows)";
        Emitted flushed = segmenter.endOfTrace(PassSegmenter.IDLE);
        out.add(flushed);
        SegmenterState after = segmenter.state();
        int afterSize = encodedSize(after);
        String what;
        if (afterSize <= maxStateBytes) {
            put(key, after);
            what = "the open pass is closed early, as an idle flush would";
        } else {
            live.remove(key);
            segmenters.delete(key);
            what = "the run's segmenter restarts (anchor detection and pass numbering start over)";
        }
        LOG.warn("{}: {}", why, what);
        out.add(new Emitted(
                List.of(),
                List.of(new Anomaly(
                        key.job(), key.rank(), AnomalyKind.STATE_BOUND, why + ": " + what, "run " + key.run()))));
    }

    /** The state's encoded size; its bytes are kept for the {@link #put} that follows. */
    private int encodedSize(SegmenterState state) {
        return stateSerde == null ? SegmenterStateCodec.encode(state).length : stateSerde.encodeForPut(state).length;
    }

    private void put(RunKey key, SegmenterState state) {
        try {
            segmenters.put(key, state);
        } finally {
            if (stateSerde != null) {
                stateSerde.forget();
            }
        }
    }

    private static void accept(PassSegmenter segmenter, List<TraceEvent> events, List<Emitted> out) {
        for (TraceEvent event : events) {
            Emitted e = segmenter.accept(event);
            if (!e.isEmpty()) {
                out.add(e);
            }
        }
    }

    /** The segmenter of an ended run that still waits for its host lane, or null when there is none. */
    private PassSegmenter waitingSegmenter(RunKey key) {
        PassSegmenter segmenter = live.get(key);
        if (segmenter == null) {
            SegmenterState saved = segmenters.get(key);
            if (saved == null) {
                return null;
            }
            segmenter = PassSegmenter.fromState(segmenterConfig, saved);
            live.put(key, segmenter);
        }
        return segmenter.awaitingHost() ? segmenter : null;
    }

    /** The run's live segmenter: cached, else decoded from the store, else a new one. */
    private PassSegmenter segmenter(RunKey key, TraceBatch batch) {
        PassSegmenter segmenter = live.get(key);
        if (segmenter == null) {
            SegmenterState saved = segmenters.get(key);
            segmenter = saved == null
                    ? new PassSegmenter(segmenterConfig, batch.job(), batch.run(), batch.rank())
                    : PassSegmenter.fromState(segmenterConfig, saved);
            live.put(key, segmenter);
        }
        return segmenter;
    }

    /** Closes runs idle for the timeout and forgets runs that ended (or went idle) long ago. */
    private void punctuate(long streamTimeMs) {
        List<KeyValue<RunKey, RunState>> entries = new ArrayList<>();
        try (KeyValueIterator<RunKey, RunState> it = runs.all()) {
            it.forEachRemaining(entries::add);
        }
        for (KeyValue<RunKey, RunState> entry : entries) {
            RunKey key = entry.key;
            RunState state = entry.value;
            if (state.pending() && streamTimeMs - state.lastGpuRecordMs() >= idleTimeoutMs) {
                flushIdle(key, state, streamTimeMs);
            } else if (!state.pending() && streamTimeMs - state.lastRecordMs() >= retentionMs) {
                live.remove(key);
                segmenters.delete(key);
                runs.delete(key);
            }
        }
    }

    private void flushIdle(RunKey key, RunState state, long streamTimeMs) {
        Emitted emitted;
        try {
            PassSegmenter segmenter = live.remove(key);
            if (segmenter == null) {
                SegmenterState saved = segmenters.get(key);
                if (saved == null) {
                    throw new IllegalStateException("pending run without a segmenter state");
                }
                segmenter = PassSegmenter.fromState(segmenterConfig, saved);
            }
            emitted = segmenter.endOfTrace(PassSegmenter.IDLE);
            // The segmenter state after the flush is kept: if the rank resumes, pass numbering goes on.
            List<Emitted> capped = new ArrayList<>();
            putCapped(key, segmenter, capped);
            capped.forEach(e -> forward(e, streamTimeMs, key));
            runs.put(key, state.withPending(false));
        } catch (RuntimeException e) {
            // One rank's failure must not stop the others' flushes, nor repeat every punctuation.
            LOG.warn("idle flush of {} run {} failed; its open pass is dropped", key.rankKey(), key.run(), e);
            meters.error(StreamsMeters.Stage.PUNCTUATION);
            segmenters.delete(key);
            runs.put(key, state.withPending(false));
            send(
                    sinks.anomalies(),
                    key.rankKey(),
                    new Anomaly(
                            key.job(),
                            key.rank(),
                            AnomalyKind.UNPROCESSABLE_RECORD,
                            "idle flush failed, open pass dropped: " + e,
                            "run " + key.run()),
                    streamTimeMs);
            return;
        }
        LOG.info("closed idle {} run {} at stream time {}", key.rankKey(), key.run(), streamTimeMs);
        meters.flushed(StreamsMeters.FlushReason.IDLE);
        forward(emitted, streamTimeMs, key);
        if (sinks.host() != null) {
            send(
                    sinks.host(),
                    key.rankKey(),
                    new HostFeed(key, TraceBatch.Lane.GPU, List.of(), passes(List.of(emitted)), false, false, true),
                    streamTimeMs);
        }
    }

    private static List<io.llmprof.events.PassRecord> passes(List<Emitted> out) {
        List<io.llmprof.events.PassRecord> passes = new ArrayList<>();
        for (Emitted e : out) {
            for (ClosedPass closed : e.passes()) {
                passes.add(closed.pass());
            }
        }
        return passes;
    }

    private void forward(Emitted emitted, long timestampMs, RunKey key) {
        for (ClosedPass closed : emitted.passes()) {
            send(sinks.passes(), closed.pass().key(), closed.pass(), timestampMs);
            for (LayerRecord layer : closed.layers()) {
                send(sinks.layers(), layer.key(), layer, timestampMs);
            }
        }
        for (Anomaly anomaly : emitted.anomalies()) {
            String anomalyKey = anomaly.job() != null && anomaly.rank() != null
                    ? RankKey.of(anomaly.job(), anomaly.rank())
                    : key.rankKey();
            send(sinks.anomalies(), anomalyKey, anomaly, timestampMs);
        }
    }

    private void send(String child, String key, Object value, long timestampMs) {
        context.forward(new Record<>(key, value, timestampMs), child);
    }
}
