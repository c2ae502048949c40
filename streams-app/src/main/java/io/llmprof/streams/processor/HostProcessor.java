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
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
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
 * Host-overhead analysis, live: the segmenter's child. Per (job, rank, run) one {@link HostTracker} (step
 * windows, M1..M5 sums, drill-down) and one {@link HostRollup} (rolling verdicts per phase), kept in one store
 * entry in {@link HostStateCodec}'s binary form. Every {@link HostFeed} goes through the tracker; each step it
 * closes goes to {@code llmprof.host-steps}, and the newest verdict of each phase it touched (the {@code all}
 * one with the drill-down) to {@code llmprof.host-verdicts}.
 *
 * <p>Its failures stay its own: a feed that throws resets the run's host state, sends an anomaly and counts
 * an error, but the record's passes and layers, already forwarded by the segmenter, stand. A finished run
 * keeps its rollup (a resumed rank goes on from it) until the state retention expires.
 */
public final class HostProcessor implements Processor<String, Object, String, Object> {
    private static final Logger LOG = LoggerFactory.getLogger(HostProcessor.class);
    private static final byte FORMAT = 1;
    static final int LIVE_RUNS = 64;

    /** Names of the children this processor forwards to. */
    public record Sinks(String steps, String verdicts, String anomalies) {}

    private final HostConfig config;
    private final StreamsMeters meters;
    private final String storeName;
    private final Sinks sinks;
    private final Duration punctuationInterval;
    private final long retentionMs;

    /** Decoded state of recently used runs, as the store holds it; dropped on any failure, init and close. */
    private final Map<RunKey, RunHost> live = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<RunKey, RunHost> eldest) {
            return size() > LIVE_RUNS;
        }
    };

    private ProcessorContext<String, Object> context;
    private KeyValueStore<RunKey, byte[]> store;

    /** A run's host state: the tracker (null once the run finished) and the rollup. */
    private static final class RunHost {
        HostTracker tracker;
        HostRollup rollup;
        long lastRecordMs;
    }

    public HostProcessor(
            HostConfig config,
            StreamsMeters meters,
            String storeName,
            Sinks sinks,
            Duration punctuationInterval,
            Duration retention) {
        this.config = Objects.requireNonNull(config, "config");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.storeName = Objects.requireNonNull(storeName, "storeName");
        this.sinks = Objects.requireNonNull(sinks, "sinks");
        this.punctuationInterval = Objects.requireNonNull(punctuationInterval, "punctuationInterval");
        this.retentionMs = retention.toMillis();
    }

    @Override
    public void init(ProcessorContext<String, Object> context) {
        live.clear();
        this.context = context;
        this.store = context.getStateStore(storeName);
        context.schedule(punctuationInterval, PunctuationType.STREAM_TIME, this::punctuate);
    }

    @Override
    public void close() {
        live.clear();
    }

    @Override
    public void process(Record<String, Object> record) {
        if (!(record.value() instanceof HostFeed feed)) {
            return; // only the segmenter forwards here
        }
        RunKey key = feed.key();
        List<HostStep> steps = new ArrayList<>();
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
            }
            if (feed.finished()) {
                tracker.finish(steps::add);
            }
            HostDrillDown drill = steps.isEmpty() ? null : tracker.drillDown();
            for (int i = 0; i < steps.size(); i++) {
                for (HostVerdict v : run.rollup.add(steps.get(i), i == steps.size() - 1 ? drill : null)) {
                    verdicts.put(v.phase(), v);
                }
            }
            meters.hostBuffered(tracker.bufferedIntervals());
            if (feed.finished()) {
                run.tracker = null;
            }
            run.lastRecordMs = record.timestamp();
            store.put(key, encode(run));
        } catch (RuntimeException e) {
            live.remove(key);
            store.delete(key);
            meters.error(StreamsMeters.Stage.HOST);
            LOG.warn(
                    "host-overhead analysis of {} run {} failed; its host state is reset", key.rankKey(), key.run(), e);
            send(
                    sinks.anomalies(),
                    key.rankKey(),
                    new Anomaly(
                            key.job(),
                            key.rank(),
                            AnomalyKind.UNPROCESSABLE_RECORD,
                            "host-overhead analysis failed, its state was reset: " + e,
                            "run " + key.run() + ", " + feed.lane() + " lane"),
                    record.timestamp());
            return;
        }
        for (HostStep s : steps) {
            meters.hostStep(s.complete());
            send(sinks.steps(), key.rankKey(), s, record.timestamp());
        }
        for (HostVerdict v : verdicts.values()) {
            send(sinks.verdicts(), v.key(), v, record.timestamp());
        }
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

    /** Forgets finished runs whose last record is older than the retention; open runs wait for the segmenter. */
    private void punctuate(long streamTimeMs) {
        List<KeyValue<RunKey, byte[]>> entries = new ArrayList<>();
        try (KeyValueIterator<RunKey, byte[]> it = store.all()) {
            it.forEachRemaining(entries::add);
        }
        for (KeyValue<RunKey, byte[]> entry : entries) {
            try {
                RunHost run = decode(entry.value);
                if (streamTimeMs - run.lastRecordMs >= retentionMs) {
                    live.remove(entry.key);
                    store.delete(entry.key);
                }
            } catch (RuntimeException e) {
                LOG.warn("unreadable host state of {} run {}; dropped", entry.key.rankKey(), entry.key.run(), e);
                meters.error(StreamsMeters.Stage.PUNCTUATION);
                live.remove(entry.key);
                store.delete(entry.key);
            }
        }
    }

    private void send(String child, String key, Object value, long timestampMs) {
        context.forward(new Record<>(key, value, timestampMs), child);
    }

    private byte[] encode(RunHost run) {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeByte(FORMAT);
            out.writeLong(run.lastRecordMs);
            byte[] tracker = run.tracker == null ? null : HostStateCodec.encode(run.tracker);
            out.writeInt(tracker == null ? -1 : tracker.length);
            if (tracker != null) {
                out.write(tracker);
            }
            byte[] rollup = HostStateCodec.encode(run.rollup);
            out.writeInt(rollup.length);
            out.write(rollup);
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private RunHost decode(byte[] data) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(data))) {
            byte format = in.readByte();
            if (format != FORMAT) {
                throw new IllegalArgumentException("unknown host state format " + format);
            }
            RunHost run = new RunHost();
            run.lastRecordMs = in.readLong();
            int trackerLength = in.readInt();
            if (trackerLength >= 0) {
                run.tracker = HostStateCodec.decodeTracker(config, in.readNBytes(trackerLength));
            }
            run.rollup = HostStateCodec.decodeRollup(config, in.readNBytes(in.readInt()));
            return run;
        } catch (IOException e) {
            throw new IllegalArgumentException("truncated host state: " + e.getMessage(), e);
        }
    }
}
