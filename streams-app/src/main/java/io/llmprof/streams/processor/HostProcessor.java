package io.llmprof.streams.processor;

import io.llmprof.events.Anomaly;
import io.llmprof.events.AnomalyKind;
import io.llmprof.events.PassRecord;
import io.llmprof.events.TraceEvent;
import io.llmprof.events.host.HostDrillDown;
import io.llmprof.events.host.HostStep;
import io.llmprof.events.host.HostVerdict;
import io.llmprof.streams.host.HostConfig;
import io.llmprof.streams.host.HostRollup;
import io.llmprof.streams.host.HostStateCodec;
import io.llmprof.streams.host.HostTracker;
import io.llmprof.streams.metrics.StreamsMeters;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
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
 * Host-overhead analysis, live: the segmenter's child. Per (job, rank, run) one {@link HostTracker} (step
 * windows, M1..M5 sums, drill-down) and one {@link HostRollup} (rolling verdicts per phase), kept in one store
 * entry in {@link HostStateCodec}'s protobuf form. Every {@link HostFeed} goes through the tracker; each step it
 * closes goes to {@code llmprof.host-steps}, and the newest verdict of each phase it touched (the {@code all}
 * one with the drill-down) to {@code llmprof.host-verdicts}.
 *
 * <p>A run's windows all close when both its lanes ended, or when the segmenter closes the run as idle. The
 * segmenter may be done with a run before its host lane ended (the GPU lane ended and no GPU event waits for a
 * marker); the host lane still brings launches, prep ranges and NVTX step windows, so the tracker waits for it.
 * A run whose GPU lane ended but whose host lane never ends (a second device of a process has none) is closed
 * when stream time passes its last record by the idle timeout, as the segmenter closes idle ranks.
 *
 * <p>Its failures stay its own: a feed that throws resets the run's host state, sends an anomaly and counts
 * an error, but the record's passes and layers, already forwarded by the segmenter, stand. A finished run
 * keeps its rollup (a resumed rank goes on from it) until the state retention expires.
 *
 * <p>A run's entry is never written over {@code maxStateBytes}: its tracker restarts first (what it buffered is
 * dropped), then its rollup, with a STATE_BOUND anomaly. A changelog record Kafka refuses kills the stream thread.
 */
public final class HostProcessor implements Processor<String, Object, String, Object> {
    private static final Logger LOG = LoggerFactory.getLogger(HostProcessor.class);
    static final int LIVE_RUNS = 64;

    /** Names of the children this processor forwards to. */
    public record Sinks(String steps, String verdicts, String anomalies) {}

    private final HostConfig config;
    private final StreamsMeters meters;
    private final String storeName;
    private final Sinks sinks;
    private final Duration punctuationInterval;
    private final long idleTimeoutMs;
    private final long retentionMs;

    /**
     * Decoded state of recently used runs: the store's, plus what changed since the last commit for the runs in
     * {@link #dirty}; dropped on any failure, init and close. A changed run leaving this cache is written first.
     */
    private final Map<RunKey, RunHost> live = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<RunKey, RunHost> eldest) {
            if (size() <= LIVE_RUNS) {
                return false;
            }
            Long timestampMs = dirty.remove(eldest.getKey());
            if (timestampMs != null) {
                write(eldest.getKey(), eldest.getValue(), timestampMs);
            }
            return true;
        }
    };

    /**
     * Runs changed since the last commit, with the timestamp of the record that last changed each: their state is
     * encoded and put once, when the task commits ({@link CommitHookStore}), not once per record.
     */
    private final Map<RunKey, Long> dirty = new LinkedHashMap<>();

    private final CommitHookStore.Listener commitHook = this::writeChanged;
    private final String[] commitStores;
    /** The stores whose commit hooks this processor registered with (init), to leave them on close. */
    private StateStore[] hooked;

    private ProcessorContext<String, Object> context;
    private ProcessorNode<?, ?, ?, ?> node;
    private KeyValueStore<RunKey, byte[]> store;
    /** Whether the store has a commit hook; without one (a plain store) every record writes its state. */
    private boolean deferred;

    /** A run's host state: the tracker (null once the run finished), the rollup, and which lanes ended. */
    private static final class RunHost {
        HostTracker tracker;
        HostRollup rollup;
        long lastRecordMs;
        boolean gpuEnded;
        boolean hostEnded;
    }

    private final int maxStateBytes;

    public HostProcessor(
            HostConfig config,
            StreamsMeters meters,
            String storeName,
            Sinks sinks,
            Duration punctuationInterval,
            Duration idleTimeout,
            Duration retention,
            int maxStateBytes,
            String... commitStores) {
        this.commitStores = commitStores.clone();
        if (maxStateBytes < 1) {
            throw new IllegalArgumentException("maxStateBytes must be positive, got " + maxStateBytes);
        }
        this.maxStateBytes = maxStateBytes;
        this.config = Objects.requireNonNull(config, "config");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.storeName = Objects.requireNonNull(storeName, "storeName");
        this.sinks = Objects.requireNonNull(sinks, "sinks");
        this.punctuationInterval = Objects.requireNonNull(punctuationInterval, "punctuationInterval");
        this.idleTimeoutMs = idleTimeout.toMillis();
        this.retentionMs = retention.toMillis();
    }

    @Override
    public void init(ProcessorContext<String, Object> context) {
        live.clear();
        dirty.clear();
        this.context = context;
        this.node = CommitHookStore.currentNode(context);
        this.store = context.getStateStore(storeName);
        this.deferred = CommitHookStore.hooked(store);
        // After the segmenter's hook (order 1): a pass its state cap closes at a commit reaches this processor.
        List<String> names = new ArrayList<>(List.of(storeName));
        names.addAll(List.of(commitStores));
        this.hooked = CommitHookStore.register(2, commitHook, context, names);
        context.schedule(punctuationInterval, PunctuationType.STREAM_TIME, this::punctuate);
    }

    @Override
    public void close() {
        // Uncommitted changes are dropped: a clean close committed them first, a dirty one must not write them.
        live.clear();
        dirty.clear();
        if (hooked != null) {
            CommitHookStore.unregister(commitHook, hooked);
        }
    }

    @Override
    public void process(Record<String, Object> record) {
        if (!(record.value() instanceof HostFeed feed)) {
            return; // only the segmenter forwards here
        }
        RunKey key = feed.key();
        List<HostStep> steps = new ArrayList<>();
        List<Anomaly> capped = new ArrayList<>();
        Map<String, HostVerdict> verdicts = new LinkedHashMap<>();
        RunHost run;
        try {
            run = load(key);
            if (run.tracker == null) {
                if (feed.lane() != io.llmprof.events.TraceBatch.Lane.GPU
                        || feed.events().isEmpty()) {
                    return; // the run finished: late host events and end markers change nothing
                }
                // the rank resumed after an idle flush finished its run: a new tracker, the same rollup
                run.tracker = new HostTracker(config, key.job(), key.run(), key.rank());
                run.gpuEnded = false;
                run.hostEnded = false;
            }
            HostTracker tracker = run.tracker;
            for (TraceEvent e : feed.events()) {
                tracker.accept(feed.lane(), e, steps::add);
            }
            for (PassRecord p : feed.passes()) {
                tracker.pass(p, steps::add);
            }
            if (feed.noPasses()) {
                tracker.noPasses(steps::add);
            }
            if (feed.laneEnded()) {
                tracker.laneEnded(feed.lane(), steps::add);
                if (feed.lane() == io.llmprof.events.TraceBatch.Lane.GPU) {
                    run.gpuEnded = true;
                } else {
                    run.hostEnded = true;
                }
            }
            boolean finish = feed.idleFlush() || (run.gpuEnded && run.hostEnded);
            if (finish) {
                tracker.finish(steps::add);
            }
            roll(run, steps, verdicts);
            meters.hostBuffered(tracker.bufferedIntervals());
            if (finish) {
                run.tracker = null;
            }
            run.lastRecordMs = record.timestamp();
            if (deferred) {
                dirty.put(key, record.timestamp());
            } else {
                put(key, encodeCapped(key, run, capped));
            }
        } catch (RuntimeException e) {
            reset(key, e, feed.lane() + " lane", record.timestamp());
            return;
        }
        forward(key, steps, verdicts, record.timestamp());
        capped.forEach(a -> send(sinks.anomalies(), key.rankKey(), a, record.timestamp()));
    }

    /** Folds the steps into the run's rollup: the newest verdict per phase, the last step's with the drill-down. */
    private static void roll(RunHost run, List<HostStep> steps, Map<String, HostVerdict> verdicts) {
        HostDrillDown drill = steps.isEmpty() ? null : run.tracker.drillDown();
        for (int i = 0; i < steps.size(); i++) {
            for (HostVerdict v : run.rollup.add(steps.get(i), i == steps.size() - 1 ? drill : null)) {
                verdicts.put(v.phase(), v);
            }
        }
    }

    private void forward(RunKey key, List<HostStep> steps, Map<String, HostVerdict> verdicts, long timestampMs) {
        for (HostStep s : steps) {
            meters.hostStep(s.complete());
            send(sinks.steps(), key.rankKey(), s, timestampMs);
        }
        for (HostVerdict v : verdicts.values()) {
            send(sinks.verdicts(), v.key(), v, timestampMs);
        }
    }

    /** Writes every run changed since the last commit (the commit hook; also before a punctuation reads the store). */
    private void writeChanged() {
        PendingBatches.drainEach(dirty, Long::longValue, (key, timestampMs) -> {
            RunHost run = live.get(key);
            if (run != null) {
                CommitHookStore.asProcessor(context, node, timestampMs, () -> write(key, run, timestampMs));
            }
        });
    }

    /** Encodes and puts one run's state under the cap; a cap hit's anomaly is forwarded. */
    private void write(RunKey key, RunHost run, long timestampMs) {
        List<Anomaly> capped = new ArrayList<>();
        try {
            put(key, encodeCapped(key, run, capped));
        } catch (RuntimeException e) {
            reset(key, e, "writing its state", timestampMs);
            return;
        }
        capped.forEach(a -> send(sinks.anomalies(), key.rankKey(), a, timestampMs));
    }

    /** A failure of one run's analysis: its host state is dropped, an anomaly says so, an error is counted. */
    private void reset(RunKey key, RuntimeException e, String where, long timestampMs) {
        dirty.remove(key);
        live.remove(key);
        store.delete(key);
        meters.error(StreamsMeters.Stage.HOST);
        LOG.warn("host-overhead analysis of {} run {} failed; its host state is reset", key.rankKey(), key.run(), e);
        send(
                sinks.anomalies(),
                key.rankKey(),
                new Anomaly(
                        key.job(),
                        key.rank(),
                        AnomalyKind.UNPROCESSABLE_RECORD,
                        "host-overhead analysis failed, its state was reset: " + e,
                        "run " + key.run() + ", " + where),
                timestampMs);
    }

    private RunHost load(RunKey key) {
        RunHost run = live.get(key);
        if (run != null) {
            return run;
        }
        byte[] saved = store.get(key);
        run = saved == null ? fresh(key) : decode(saved);
        live.put(key, run);
        return run;
    }

    private RunHost fresh(RunKey key) {
        RunHost run = new RunHost();
        run.tracker = new HostTracker(config, key.job(), key.run(), key.rank());
        run.rollup = new HostRollup(config);
        return run;
    }

    /**
     * Forgets runs whose last record is older than the retention, and closes runs whose GPU lane ended but whose
     * host lane has not ended for the idle timeout (they may have no host lane at all).
     */
    private void punctuate(long streamTimeMs) {
        writeChanged();
        // Only the head of each entry is read (time, lane ends): a run's buffered intervals are decoded only when
        // it has to be closed.
        List<RunKey> expired = new ArrayList<>();
        List<RunKey> unreadable = new ArrayList<>();
        List<RunKey> idle = new ArrayList<>();
        try (KeyValueIterator<RunKey, byte[]> it = store.all()) {
            while (it.hasNext()) {
                KeyValue<RunKey, byte[]> entry = it.next();
                HostStateCodec.Head head;
                try {
                    head = HostStateCodec.head(entry.value);
                } catch (RuntimeException e) {
                    LOG.warn("unreadable host state of {} run {}; dropped", entry.key.rankKey(), entry.key.run(), e);
                    unreadable.add(entry.key);
                    continue;
                }
                if (streamTimeMs - head.lastRecordMs() >= retentionMs) {
                    expired.add(entry.key);
                } else if (head.open() && head.gpuEnded() && streamTimeMs - head.lastRecordMs() >= idleTimeoutMs) {
                    idle.add(entry.key);
                }
            }
        }
        for (RunKey key : unreadable) {
            meters.error(StreamsMeters.Stage.PUNCTUATION);
            live.remove(key);
            store.delete(key);
        }
        for (RunKey key : expired) {
            live.remove(key);
            store.delete(key);
        }
        for (RunKey key : idle) {
            RunHost run;
            try {
                run = decode(store.get(key));
            } catch (RuntimeException e) {
                reset(key, e, "closing it without its host lane's end", streamTimeMs);
                continue;
            }
            closeWithoutHostEnd(key, run, streamTimeMs);
        }
    }

    private void closeWithoutHostEnd(RunKey key, RunHost run, long streamTimeMs) {
        List<HostStep> steps = new ArrayList<>();
        List<Anomaly> capped = new ArrayList<>();
        Map<String, HostVerdict> verdicts = new LinkedHashMap<>();
        try {
            live.remove(key); // the store holds the latest state: the live copy goes through the same change
            run.tracker.finish(steps::add);
            roll(run, steps, verdicts);
            run.tracker = null;
            put(key, encodeCapped(key, run, capped));
            live.put(key, run);
        } catch (RuntimeException e) {
            reset(key, e, "closing it without its host lane's end", streamTimeMs);
            return;
        }
        LOG.info(
                "closed the host windows of {} run {}: its GPU lane ended, its host lane did not end within {} ms",
                key.rankKey(),
                key.run(),
                idleTimeoutMs);
        forward(key, steps, verdicts, streamTimeMs);
        capped.forEach(a -> send(sinks.anomalies(), key.rankKey(), a, streamTimeMs));
    }

    /**
     * The run encoded, under {@code maxStateBytes}: over it, the tracker restarts (its buffered intervals and open
     * windows are dropped), then, if still over, the rollup too; the STATE_BOUND anomaly goes to {@code anomalies}.
     */
    private byte[] encodeCapped(RunKey key, RunHost run, List<Anomaly> anomalies) {
        byte[] bytes = encode(run);
        if (bytes.length <= maxStateBytes) {
            return bytes;
        }
        meters.stateCapped(StreamsMeters.StateStore.HOST);
        String why = "host state of " + key.rankKey() + " run " + key.run() + " grew to " + bytes.length
                + " bytes, over the cap of " + maxStateBytes;
        String what = "its host tracker restarts (buffered intervals and open step windows are dropped)";
        if (run.tracker != null) {
            run.tracker = new HostTracker(config, key.job(), key.run(), key.rank());
            bytes = encode(run);
        }
        if (bytes.length > maxStateBytes) {
            run.rollup = new HostRollup(config);
            what = "its host tracker and rolling verdicts restart";
            bytes = encode(run);
        }
        LOG.warn("{}: {}", why, what);
        anomalies.add(
                new Anomaly(key.job(), key.rank(), AnomalyKind.STATE_BOUND, why + ": " + what, "run " + key.run()));
        return bytes;
    }

    private void put(RunKey key, byte[] state) {
        store.put(key, state);
        meters.stateWritten(StreamsMeters.StateStore.HOST);
    }

    private void send(String child, String key, Object value, long timestampMs) {
        context.forward(new Record<>(key, value, timestampMs), child);
    }

    private static byte[] encode(RunHost run) {
        return HostStateCodec.encode(
                new HostStateCodec.Run(run.lastRecordMs, run.gpuEnded, run.hostEnded, run.tracker, run.rollup));
    }

    private RunHost decode(byte[] data) {
        HostStateCodec.Run stored = HostStateCodec.decodeRun(config, data);
        RunHost run = new RunHost();
        run.lastRecordMs = stored.lastRecordMs();
        run.gpuEnded = stored.gpuEnded();
        run.hostEnded = stored.hostEnded();
        run.tracker = stored.tracker();
        run.rollup = stored.rollup();
        return run;
    }
}
