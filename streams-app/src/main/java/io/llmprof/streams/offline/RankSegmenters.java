package io.llmprof.streams.offline;

import io.llmprof.events.TraceBatch;
import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.Emitted;
import io.llmprof.streams.boundary.PassSegmenter;
import java.util.Collection;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * One {@link PassSegmenter} per rank, fed both lanes of a reader's output: host step markers and launch
 * correlations decide marker-cut passes, so every offline command that segments a trace must feed them the
 * same way to see the same passes. Outputs go to {@code out} with their rank.
 */
final class RankSegmenters {
    private final Function<String, PassSegmenter> create;
    private final BiConsumer<String, Emitted> out;
    private final Map<String, PassSegmenter> segmenters = new TreeMap<>();
    private final Set<String> ended = new HashSet<>();
    /** Run as soon as a rank's launch context has lost a launch (null: nothing). */
    private Runnable onLaunchLost;

    /** @param create makes a rank's segmenter when its first event arrives */
    RankSegmenters(Function<String, PassSegmenter> create, BiConsumer<String, Emitted> out) {
        this.create = create;
        this.out = out;
    }

    void event(String rank, TraceBatch.Lane lane, TraceEvent e) {
        if (lane != TraceBatch.Lane.GPU && ended.contains(rank)) {
            return; // host events after the rank's GPU lane ended change nothing
        }
        PassSegmenter s = segmenters.computeIfAbsent(rank, create);
        out.accept(rank, s.accept(e));
        if (onLaunchLost != null && s.launchContext().lost() > 0) {
            onLaunchLost.run();
        }
    }

    /** {@code action} runs after each event once a rank's launch context lost a launch ({@link ExactOrder}). */
    void onLaunchLost(Runnable action) {
        this.onLaunchLost = action;
    }

    void endOfTrace(String rank, TraceBatch.Lane lane) {
        endOfTrace(rank, lane, PassSegmenter.END_OF_TRACE);
    }

    /** As {@link #endOfTrace(String, TraceBatch.Lane)}; {@code reason} {@link PassSegmenter#INPUT_ENDED_EARLY} for a
     * broken input. */
    void endOfTrace(String rank, TraceBatch.Lane lane, String reason) {
        PassSegmenter s = segmenters.get(rank);
        if (s == null) {
            return;
        }
        if (lane == TraceBatch.Lane.HOST) {
            if (!ended.contains(rank)) {
                out.accept(rank, s.hostEnded());
            }
        } else {
            end(rank, s, reason);
        }
    }

    /** Ends every rank whose GPU lane has not ended (the file ended without saying so). */
    void finishAll() {
        finishAll(PassSegmenter.END_OF_TRACE);
    }

    /** As {@link #finishAll()}, with {@code reason} for the open passes. */
    void finishAll(String reason) {
        segmenters.forEach((rank, s) -> end(rank, s, reason));
    }

    /** Launches of every rank dropped before their kernel arrived (those kernels fell back to their names). */
    long launchesLost() {
        return segmenters.values().stream()
                .mapToLong(s -> s.launchContext().lost())
                .sum();
    }

    /** Forgets a rank: its segmenter and open pass are dropped, nothing more is emitted for it. */
    void drop(String rank) {
        segmenters.remove(rank);
        ended.add(rank);
    }

    Collection<PassSegmenter> all() {
        return segmenters.values();
    }

    /** Each rank's segmenter, in rank order. */
    void each(BiConsumer<String, PassSegmenter> action) {
        segmenters.forEach(action);
    }

    private void end(String rank, PassSegmenter s, String reason) {
        if (ended.add(rank)) {
            out.accept(rank, s.endOfTrace(reason));
            out.accept(rank, s.hostEnded()); // a rank whose host lane never ends must not wait
        }
    }
}
