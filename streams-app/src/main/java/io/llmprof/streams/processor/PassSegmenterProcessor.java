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
import java.util.function.Consumer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.ProcessorNode;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Adapts the per-rank {@link PassSegmenter} to Kafka Streams: per (job, rank, run) a small run-store entry
 * (cursors, clocks; touched by every batch) and a segmenter-store entry (changed by GPU batches, and host batches
 * with step markers, launches, or the rank's first events), de-duplication by (source, lane) index, and a
 * stream-time punctuator that closes idle ranks. With a {@link CommitHookStore} under the segmenter store (the
 * topology's), a changed segmenter state is encoded and written once per commit, in the commit's transaction;
 * without one, once per batch.
 *
 * <p>A record is all or nothing: the stores are written and outputs are forwarded only after every event of
 * the batch went through the segmenter. A record that throws leaves the state as it was (the batches since the
 * last write are replayed onto the stored state) and goes to the dead-letter topic through the processing
 * exception handler.
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
     * The segmenters of recently used runs: the store's state, plus the batches since the last commit for the runs
     * in {@link #pending}. An entry is rebuilt whenever processing fails (its object may be half-way through a
     * batch), and the whole map is dropped on init and close (a task revived after a failed commit, or moved,
     * restores its stores and must not see what this instance had). A run leaving it with pending batches is
     * written first.
     */
    private final Map<RunKey, PassSegmenter> live = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<RunKey, PassSegmenter> eldest) {
            if (size() <= LIVE_SEGMENTERS) {
                return false;
            }
            PendingBatches.Pending<Replay> p = pending.remove(eldest.getKey());
            if (p != null) {
                write(eldest.getKey(), eldest.getValue(), p.timestampMs);
            }
            return true;
        }
    };

    /** One batch's calls on a segmenter, to replay onto a stored state. */
    private interface Replay extends Consumer<PassSegmenter> {}

    /**
     * What changed a run's segmenter since its state was last written: the state is encoded and put once, when the
     * task commits ({@link CommitHookStore}), not once per batch; a record stays all or nothing by the replay.
     */
    private final PendingBatches<RunKey, Replay> pending = new PendingBatches<>();

    private final CommitHookStore.Listener commitHook = this::writeChanged;
    private final String[] commitStores;
    /** The stores whose commit hooks this processor registered with (init), to leave them on close. */
    private StateStore[] hooked;

    private ProcessorContext<String, Object> context;
    private ProcessorNode<?, ?, ?, ?> node;
    private KeyValueStore<RunKey, RunState> runs;
    private KeyValueStore<RunKey, SegmenterState> segmenters;
    /** Whether the segmenter store has a commit hook; without one (a plain store) every batch writes its state. */
    private boolean deferred;

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
            SegmenterStateSerde stateSerde,
            String... commitStores) {
        this.commitStores = commitStores.clone();
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
        pending.clear();
        this.context = context;
        this.node = CommitHookStore.currentNode(context);
        this.runs = context.getStateStore(runStoreName);
        this.segmenters = context.getStateStore(segmenterStoreName);
        this.deferred = CommitHookStore.hooked(segmenters);
        // First (order 1): a pass its state cap closes at a commit feeds the host processor, which writes after.
        List<String> names = new ArrayList<>(List.of(runStoreName, segmenterStoreName));
        names.addAll(List.of(commitStores));
        this.hooked = CommitHookStore.register(1, commitHook, context, names);
        context.schedule(punctuationInterval, PunctuationType.STREAM_TIME, this::punctuate);
    }

    @Override
    public void close() {
        // Uncommitted batches are dropped: a clean close committed them first, a dirty one must not write them.
        live.clear();
        pending.clear();
        if (hooked != null) {
            CommitHookStore.unregister(commitHook, hooked);
        }
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
            // The live object may be half-way through this batch: back to the stored state and the batches since.
            restore(key);
            throw e;
        }
        if (segmenter != null) {
            try {
                if (finished) {
                    live.remove(key);
                    pending.remove(key);
                    segmenters.delete(key);
                } else if (segmenter.modCount() != modCount || pending.get(key) != null) {
                    if (!deferred || !pending.fits(key, fresh.size())) {
                        putCapped(key, segmenter, out);
                        pending.remove(key);
                    } else {
                        pending.add(
                                key, replay(batch.lane(), fresh, batch.endOfTrace()), fresh.size(), record.timestamp());
                    }
                }
            } catch (RuntimeException e) {
                // Two stores, one record: undo the run store's write so that neither moved.
                restore(key);
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

    /** One batch's calls on a segmenter, as {@link #process} made them, to replay onto a stored state. */
    private static Replay replay(TraceBatch.Lane lane, List<TraceEvent> events, boolean endOfTrace) {
        return segmenter -> {
            for (TraceEvent event : events) {
                segmenter.accept(event);
            }
            if (endOfTrace) {
                if (lane == TraceBatch.Lane.HOST) {
                    segmenter.hostEnded();
                } else {
                    segmenter.endOfTrace(PassSegmenter.END_OF_TRACE);
                }
            }
        };
    }

    /**
     * Rebuilds a run's live segmenter after a failed batch: the stored state (or a new segmenter) with the batches
     * since the last write replayed, their outputs discarded (they went out with their records).
     */
    private void restore(RunKey key) {
        live.remove(key);
        PendingBatches.Pending<Replay> p = pending.get(key);
        if (p == null) {
            return; // the store holds the state before the failed batch
        }
        try {
            SegmenterState saved = segmenters.get(key);
            PassSegmenter segmenter = saved == null
                    ? new PassSegmenter(segmenterConfig, key.job(), key.run(), key.rank())
                    : PassSegmenter.fromState(segmenterConfig, saved);
            for (Replay batch : p.batches) {
                batch.accept(segmenter);
            }
            live.put(key, segmenter);
        } catch (RuntimeException e) {
            pending.remove(key);
            meters.error(StreamsMeters.Stage.PROCESSING);
            LOG.warn(
                    "could not replay {} batches of {} run {} after a failed one; the run goes on from its last"
                            + " committed state",
                    p.batches.size(),
                    key.rankKey(),
                    key.run(),
                    e);
        }
    }

    /** Writes every run changed since its last write: the commit hook. */
    private void writeChanged() {
        pending.drainEach((key, timestampMs) -> {
            PassSegmenter segmenter = live.get(key);
            if (segmenter != null) {
                CommitHookStore.asProcessor(context, node, timestampMs, () -> write(key, segmenter, timestampMs));
            }
        });
    }

    /**
     * Writes one run's segmenter state outside its batch (a commit, or the run leaving the live cache): what a
     * state cap closes is forwarded, and the host processor gets the closed passes.
     */
    private void write(RunKey key, PassSegmenter segmenter, long timestampMs) {
        List<Emitted> out = new ArrayList<>();
        try {
            putCapped(key, segmenter, out);
        } catch (RuntimeException e) {
            live.remove(key);
            meters.error(StreamsMeters.Stage.PROCESSING);
            LOG.warn(
                    "could not write the segmenter state of {} run {}; it goes on from its last committed state",
                    key.rankKey(),
                    key.run(),
                    e);
            return;
        }
        for (Emitted emitted : out) {
            forward(emitted, timestampMs, key);
        }
        List<io.llmprof.events.PassRecord> closed = passes(out);
        if (sinks.host() != null && !closed.isEmpty()) {
            send(
                    sinks.host(),
                    key.rankKey(),
                    new HostFeed(key, TraceBatch.Lane.GPU, List.of(), closed, false, false, false),
                    timestampMs);
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
            meters.stateWritten(StreamsMeters.StateStore.SEGMENTER);
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
                pending.remove(key);
                segmenters.delete(key);
                runs.delete(key);
            }
        }
    }

    private void flushIdle(RunKey key, RunState state, long streamTimeMs) {
        Emitted emitted;
        try {
            pending.remove(key); // written below, with the flush
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
