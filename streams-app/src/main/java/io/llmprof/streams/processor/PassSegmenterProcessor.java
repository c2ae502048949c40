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
import io.llmprof.streams.metrics.StreamsMeters;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
 * Adapts the per-rank {@link PassSegmenter} to Kafka Streams: one store entry per (job, rank, run),
 * de-duplication by (source, lane) index, and a stream-time punctuator that closes idle ranks.
 *
 * <p>A record is all or nothing: the store is written and outputs are forwarded only after every event of
 * the batch went through the segmenter. A record that throws leaves the state as it was and goes to the
 * dead-letter topic through the processing exception handler.
 */
public final class PassSegmenterProcessor implements Processor<String, TraceBatch, String, Object> {
    private static final Logger LOG = LoggerFactory.getLogger(PassSegmenterProcessor.class);

    /** Names of the children this processor forwards to. */
    public record Sinks(String passes, String layers, String anomalies) {
        public Sinks {
            Objects.requireNonNull(passes, "passes");
            Objects.requireNonNull(layers, "layers");
            Objects.requireNonNull(anomalies, "anomalies");
        }
    }

    private final SegmenterConfig segmenterConfig;
    private final StreamsMeters meters;
    private final String storeName;
    private final Sinks sinks;
    private final Duration punctuationInterval;
    private final long idleTimeoutMs;
    private final long retentionMs;

    private ProcessorContext<String, Object> context;
    private KeyValueStore<RunKey, RunState> store;

    public PassSegmenterProcessor(
            SegmenterConfig segmenterConfig,
            StreamsMeters meters,
            String storeName,
            Sinks sinks,
            Duration punctuationInterval,
            Duration idleTimeout,
            Duration retention) {
        this.segmenterConfig = Objects.requireNonNull(segmenterConfig, "segmenterConfig");
        this.meters = Objects.requireNonNull(meters, "meters");
        this.storeName = Objects.requireNonNull(storeName, "storeName");
        this.sinks = Objects.requireNonNull(sinks, "sinks");
        this.punctuationInterval = Objects.requireNonNull(punctuationInterval, "punctuationInterval");
        this.idleTimeoutMs = idleTimeout.toMillis();
        this.retentionMs = retention.toMillis();
    }

    @Override
    public void init(ProcessorContext<String, Object> context) {
        this.context = context;
        this.store = context.getStateStore(storeName);
        context.schedule(punctuationInterval, PunctuationType.STREAM_TIME, this::punctuate);
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
        RunState prior = store.get(key);
        RunState state = (prior == null ? RunState.fresh() : prior).seen(batch.lane(), record.timestamp());

        long next = state.next(batch.source(), batch.lane());
        int size = batch.events().size();
        int skip = (int) Math.min(size, Math.max(0, next - batch.firstIndex()));
        long missing = Math.max(0, batch.firstIndex() - next);
        List<TraceEvent> fresh = batch.events().subList(skip, size);
        state = state.withNext(batch.source(), batch.lane(), Math.max(next, batch.firstIndex() + size));

        List<Emitted> out = new ArrayList<>();
        long ingested = 0;
        long droppedAfterEnd = 0;
        boolean finished = false;
        if (batch.lane() == TraceBatch.Lane.HOST) {
            ingested = fresh.size(); // host-side analysis is not wired yet: counted only
        } else if (state.ended()) {
            droppedAfterEnd = fresh.size();
        } else {
            PassSegmenter segmenter = state.segmenter() == null
                    ? new PassSegmenter(segmenterConfig, batch.job(), batch.run(), batch.rank())
                    : PassSegmenter.fromState(segmenterConfig, state.segmenter());
            for (TraceEvent event : fresh) {
                out.add(segmenter.accept(event));
            }
            ingested = fresh.size();
            if (batch.endOfTrace()) {
                out.add(segmenter.endOfTrace(PassSegmenter.END_OF_TRACE));
                state = state.markEnded();
                finished = true;
            } else {
                state = state.withSegmenter(segmenter.state(), state.pending() || !fresh.isEmpty());
            }
        }

        store.put(key, state);
        for (Emitted emitted : out) {
            forward(emitted, record.timestamp(), key);
        }
        meters.ingested(batch.lane(), ingested);
        meters.duplicates(skip);
        if (missing > 0) {
            meters.missing(missing);
            LOG.warn(
                    "{} events of {} lane {} run {} source {} never arrived (indexes {}..{})",
                    missing,
                    key.rankKey(),
                    batch.lane(),
                    batch.run(),
                    batch.source(),
                    next,
                    batch.firstIndex() - 1);
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
        if (finished) {
            meters.flushed(StreamsMeters.FlushReason.END_OF_TRACE);
        }
    }

    /** Closes runs idle for the timeout and forgets runs that ended (or went idle) long ago. */
    private void punctuate(long streamTimeMs) {
        List<KeyValue<RunKey, RunState>> entries = new ArrayList<>();
        try (KeyValueIterator<RunKey, RunState> it = store.all()) {
            it.forEachRemaining(entries::add);
        }
        for (KeyValue<RunKey, RunState> entry : entries) {
            RunKey key = entry.key;
            RunState state = entry.value;
            if (state.pending() && streamTimeMs - state.lastGpuRecordMs() >= idleTimeoutMs) {
                flushIdle(key, state, streamTimeMs);
            } else if (!state.pending() && streamTimeMs - state.lastRecordMs() >= retentionMs) {
                store.delete(key);
            }
        }
    }

    private void flushIdle(RunKey key, RunState state, long streamTimeMs) {
        Emitted emitted;
        try {
            PassSegmenter segmenter = PassSegmenter.fromState(segmenterConfig, state.segmenter());
            emitted = segmenter.endOfTrace(PassSegmenter.IDLE);
            // The segmenter state after the flush is kept: if the rank resumes, pass numbering goes on.
            store.put(key, state.withSegmenter(segmenter.state(), false));
        } catch (RuntimeException e) {
            // One rank's failure must not stop the others' flushes, nor repeat every punctuation.
            LOG.warn("idle flush of {} run {} failed; its open pass is dropped", key.rankKey(), key.run(), e);
            meters.error(StreamsMeters.Stage.PUNCTUATION);
            store.put(key, state.withSegmenter(null, false));
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
