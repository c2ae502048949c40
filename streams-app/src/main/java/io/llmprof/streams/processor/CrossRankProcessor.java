package io.llmprof.streams.processor;

import io.llmprof.events.CrossRankPass;
import io.llmprof.events.PassRecord;
import io.llmprof.streams.crossrank.CrossRankAggregator;
import io.llmprof.streams.crossrank.CrossRankWindow;
import io.llmprof.streams.metrics.StreamsMeters;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
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
 * Folds the per-rank passes of a job (records keyed by job, after the re-key) into cross-rank records with
 * {@link CrossRankAggregator}, one store entry per (job, run, aligned index), and forwards the updated record
 * each time a rank's pass arrives.
 *
 * <p>State stays bounded: per (job, run) only the newest {@code keep} aligned indexes are held (the oldest is
 * evicted when one more arrives; a rank's pass for an index older than all of them while the window is full is
 * late: dropped and counted), and a run without updates for {@code retention} of stream time is forgotten at
 * the next punctuation. An aligned pass leaving the state is final: only then are its skew and slowest rank
 * metered, so each pass counts once, with every rank that reported it.
 */
public final class CrossRankProcessor implements Processor<String, PassRecord, String, CrossRankPass> {
    private static final Logger LOG = LoggerFactory.getLogger(CrossRankProcessor.class);
    private static final char SEP = '\u0000';
    /** Digits of the zero-padded index at the end of a pass key ({@link #passKey}). */
    private static final int INDEX_DIGITS = 19;
    /**
     * Aligned indexes after the oldest that eviction scans first for the next oldest: they are pass indexes or step
     * numbers, consecutive unless ranks skip steps.
     */
    static final long NEXT_PROBE = 16;

    private final StreamsMeters meters;
    private final String passStoreName;
    private final String windowStoreName;
    private final int keep;
    private final Duration punctuationInterval;
    private final long retentionMs;

    /** Runs whose late passes were logged once already (bounded: the least recently late are forgotten). */
    private final Map<String, Boolean> warnedRuns = new java.util.LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > 1024;
        }
    };

    private ProcessorContext<String, CrossRankPass> context;
    private KeyValueStore<String, CrossRankPass> passes;
    private KeyValueStore<String, CrossRankWindow> windows;

    /**
     * @param keep aligned indexes held per (job, run)
     * @param retention stream time after a run's last update before its state is dropped
     */
    public CrossRankProcessor(
            StreamsMeters meters,
            String passStoreName,
            String windowStoreName,
            int keep,
            Duration punctuationInterval,
            Duration retention) {
        this.meters = Objects.requireNonNull(meters, "meters");
        this.passStoreName = Objects.requireNonNull(passStoreName, "passStoreName");
        this.windowStoreName = Objects.requireNonNull(windowStoreName, "windowStoreName");
        if (keep < 1) {
            throw new IllegalArgumentException("cross-rank passes kept must be >= 1, got " + keep);
        }
        this.keep = keep;
        this.punctuationInterval = Objects.requireNonNull(punctuationInterval, "punctuationInterval");
        this.retentionMs = retention.toMillis();
    }

    /** Store key of a run: job and run, NUL-separated. */
    static String runKey(String job, String run) {
        return job + SEP + run + SEP;
    }

    /** Store key of an aligned pass: the run's key and the index zero-padded, so a range scan is in index order. */
    static String passKey(String job, String run, long index) {
        if (index < 0) {
            return runKey(job, run) + String.format(Locale.ROOT, "%0" + INDEX_DIGITS + "d", index);
        }
        String digits = Long.toString(index); // at most 19 digits
        return runKey(job, run) + "0".repeat(INDEX_DIGITS - digits.length()) + digits;
    }

    @Override
    public void init(ProcessorContext<String, CrossRankPass> context) {
        this.context = context;
        this.passes = context.getStateStore(passStoreName);
        this.windows = context.getStateStore(windowStoreName);
        context.schedule(punctuationInterval, PunctuationType.STREAM_TIME, this::expire);
    }

    @Override
    public void process(Record<String, PassRecord> record) {
        PassRecord pass = record.value();
        if (pass == null || pass.job() == null || pass.run() == null || pass.rank() == null) {
            throw new IllegalArgumentException("pass record without job, run or rank (key " + record.key() + ")");
        }
        if (pass.index() < 0) {
            throw new IllegalArgumentException("pass index must be >= 0, got " + pass.index() + " of " + pass.key());
        }
        long index = CrossRankAggregator.alignIndex(pass);
        String windowKey = runKey(pass.job(), pass.run());
        CrossRankWindow prior = windows.get(windowKey);
        CrossRankWindow window = prior == null ? CrossRankWindow.empty(pass.job(), pass.run()) : prior;
        if (window.isLate(index, keep)) {
            meters.crossRankLate();
            // One line per run: a rank far behind the others (a full-speed replay, an agent that lagged) is late for
            // thousands of passes; the rest are counted (llmprof_cross_rank_late_total) and logged at DEBUG.
            boolean first = warnedRuns.put(windowKey, Boolean.TRUE) == null;
            String line = "pass {} of {} run {} (aligned index {}) arrived after the cross-rank view of its run moved"
                    + " past index {}; not aggregated"
                    + (first ? " (later ones of this run are only counted: llmprof_cross_rank_late_total)" : "");
            if (first) {
                LOG.warn(line, pass.index(), pass.key(), pass.run(), index, window.oldest());
            } else {
                LOG.debug(line, pass.index(), pass.key(), pass.run(), index, window.oldest());
            }
            return;
        }
        window = window.withRank(pass.rank());
        String key = passKey(pass.job(), pass.run(), index);
        CrossRankPass before = passes.get(key);
        CrossRankPass updated = CrossRankAggregator.add(before, pass, window.ranks());
        passes.put(key, updated);
        window = window.updated(index, before == null, record.timestamp());
        while (window.held() > keep) {
            window = evictOldest(window);
        }
        windows.put(windowKey, window);
        context.forward(new Record<>(pass.job(), updated, record.timestamp()));
    }

    /**
     * Evicts the run's oldest aligned pass (now final) and finds the next oldest held. The oldest is read by its key;
     * the next one by a range scan, first over the {@link #NEXT_PROBE} indexes after the oldest, then over the rest.
     * A range over the caching store copies every cached key in it before it iterates (Kafka Streams'
     * {@code NamedCache.keyRange}), so a scan over the whole window, up to {@code keep} keys, per evicted pass cost
     * about 5 % of the stream thread.
     */
    private CrossRankWindow evictOldest(CrossRankWindow w) {
        String oldestKey = passKey(w.job(), w.run(), w.oldest());
        CrossRankPass oldest = passes.get(oldestKey);
        if (oldest == null) {
            throw new IllegalStateException("cross-rank window of " + w.job() + " run " + w.run() + " holds " + w.held()
                    + " passes from index " + w.oldest() + " but the store has none at that index");
        }
        passes.delete(oldestKey);
        meters.crossRankFinal(oldest);
        if (w.held() <= 1) {
            return w.evictedOldest(w.newest());
        }
        long near = w.oldest() > w.newest() - NEXT_PROBE ? w.newest() : w.oldest() + NEXT_PROBE;
        long next = firstHeld(w, w.oldest() + 1, near);
        if (next < 0) {
            next = firstHeld(w, near + 1, w.newest());
        }
        if (next < 0) {
            throw new IllegalStateException("cross-rank window of " + w.job() + " run " + w.run() + " holds " + w.held()
                    + " passes up to index " + w.newest() + " but the store has none after index " + w.oldest());
        }
        return w.evictedOldest(next);
    }

    /** The smallest aligned index of the run held in {@code [from, to]}, or -1; reads keys only. */
    private long firstHeld(CrossRankWindow w, long from, long to) {
        if (from > to) {
            return -1;
        }
        try (KeyValueIterator<String, CrossRankPass> it =
                passes.range(passKey(w.job(), w.run(), from), passKey(w.job(), w.run(), to))) {
            if (!it.hasNext()) {
                return -1;
            }
            String key = it.peekNextKey();
            return Long.parseLong(key, key.length() - INDEX_DIGITS, key.length(), 10);
        }
    }

    /** Forgets runs without an update for the retention; their held passes are final. */
    private void expire(long streamTimeMs) {
        List<CrossRankWindow> expired = new ArrayList<>();
        try (KeyValueIterator<String, CrossRankWindow> it = windows.all()) {
            while (it.hasNext()) {
                CrossRankWindow w = it.next().value;
                if (streamTimeMs - w.lastUpdateMs() >= retentionMs) {
                    expired.add(w);
                }
            }
        }
        for (CrossRankWindow w : expired) {
            List<KeyValue<String, CrossRankPass>> held = new ArrayList<>();
            try (KeyValueIterator<String, CrossRankPass> it =
                    passes.range(passKey(w.job(), w.run(), 0), passKey(w.job(), w.run(), Long.MAX_VALUE))) {
                it.forEachRemaining(held::add);
            }
            for (KeyValue<String, CrossRankPass> kv : held) {
                passes.delete(kv.key);
                meters.crossRankFinal(kv.value);
            }
            windows.delete(runKey(w.job(), w.run()));
            LOG.debug("cross-rank state of {} run {} expired ({} passes)", w.job(), w.run(), held.size());
        }
    }
}
