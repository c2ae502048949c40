package io.llmprof.streams.health;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Objects;
import java.util.function.LongSupplier;
import org.apache.kafka.streams.KafkaStreams;

/**
 * Health of one Kafka Streams instance, from its state changes and its stream-thread deaths. DOWN while:
 *
 * <ul>
 *   <li>Kafka Streams is in ERROR or PENDING_ERROR, or stopped (PENDING_SHUTDOWN, NOT_RUNNING);
 *   <li>a stream thread died and the app has not been RUNNING since (its replacement does not run yet);
 *   <li>{@code maxDeaths} threads died within {@code deathWindow} (a crash loop: each replacement meets the same
 *       failure, and the app is RUNNING most of the time in between);
 *   <li>it has been starting or REBALANCING without a break for longer than {@code maxRebalancing}.
 * </ul>
 *
 * Thread-safe: Kafka calls the listener and the handler from its threads, HTTP reads from others.
 */
public final class StreamsHealth {
    public static final Duration DEFAULT_MAX_REBALANCING = Duration.ofMinutes(2);
    public static final int DEFAULT_MAX_DEATHS = 3;
    public static final Duration DEFAULT_DEATH_WINDOW = Duration.ofMinutes(10);

    private static final int MAX_REASON = 300;

    /** What {@code /health} shows. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    @JsonPropertyOrder({"status", "state", "reason", "thread_deaths"})
    public record Status(
            @JsonProperty("status") String status,
            @JsonProperty("state") String state,
            @JsonProperty("reason") String reason,
            @JsonProperty("thread_deaths") long threadDeaths) {
        public static final String UP = "UP";
        public static final String DOWN = "DOWN";

        public boolean up() {
            return UP.equals(status);
        }

        static Status up(KafkaStreams.State state, long deaths) {
            return new Status(UP, state.name(), null, deaths);
        }

        static Status down(KafkaStreams.State state, String reason, long deaths) {
            return new Status(DOWN, state.name(), reason, deaths);
        }
    }

    private final LongSupplier nanoClock;
    private final long maxRebalancingNs;
    private final int maxDeaths;
    private final long deathWindowNs;

    private KafkaStreams.State state = KafkaStreams.State.CREATED;
    /** Since when the app has been CREATED or REBALANCING without reaching RUNNING. */
    private long notRunningSinceNs;
    /** Deaths not followed by RUNNING yet. */
    private int pendingDeaths;

    private long totalDeaths;
    private String lastDeath;
    private final ArrayDeque<Long> recentDeathsNs = new ArrayDeque<>();

    public StreamsHealth() {
        this(System::nanoTime, DEFAULT_MAX_REBALANCING, DEFAULT_MAX_DEATHS, DEFAULT_DEATH_WINDOW);
    }

    /**
     * @param nanoClock monotonic nanoseconds ({@link System#nanoTime} outside tests)
     * @param maxRebalancing longest start or rebalance still UP
     * @param maxDeaths thread deaths within {@code deathWindow} that make a crash loop (DOWN)
     */
    public StreamsHealth(LongSupplier nanoClock, Duration maxRebalancing, int maxDeaths, Duration deathWindow) {
        this.nanoClock = Objects.requireNonNull(nanoClock, "nanoClock");
        if (maxRebalancing.isNegative() || maxRebalancing.isZero() || deathWindow.isNegative() || maxDeaths < 1) {
            throw new IllegalArgumentException("bounds must be positive");
        }
        this.maxRebalancingNs = maxRebalancing.toNanos();
        this.maxDeaths = maxDeaths;
        this.deathWindowNs = deathWindow.toNanos();
        this.notRunningSinceNs = nanoClock.getAsLong();
    }

    /**
     * Kafka Streams moved to {@code newState}.
     *
     * @return the dead threads this change shows replaced: those that died before the app got back to RUNNING
     */
    public synchronized int stateChanged(KafkaStreams.State newState) {
        Objects.requireNonNull(newState, "newState");
        long now = nanoClock.getAsLong();
        boolean starting = newState == KafkaStreams.State.REBALANCING || newState == KafkaStreams.State.CREATED;
        if (starting && !(state == KafkaStreams.State.REBALANCING || state == KafkaStreams.State.CREATED)) {
            notRunningSinceNs = now;
        }
        state = newState;
        if (newState == KafkaStreams.State.RUNNING) {
            int replaced = pendingDeaths;
            pendingDeaths = 0;
            return replaced;
        }
        return 0;
    }

    /** A stream thread died of {@code cause}; Kafka replaces it. */
    public synchronized void threadDied(String thread, Throwable cause) {
        long now = nanoClock.getAsLong();
        pendingDeaths++;
        totalDeaths++;
        recentDeathsNs.addLast(now);
        lastDeath = "stream thread " + thread + " died of " + describe(cause);
        prune(now);
    }

    public synchronized long threadDeaths() {
        return totalDeaths;
    }

    public synchronized Status status() {
        long now = nanoClock.getAsLong();
        prune(now);
        switch (state) {
            case ERROR, PENDING_ERROR -> {
                return Status.down(state, bounded("Kafka Streams is in " + state + suffix()), totalDeaths);
            }
            case PENDING_SHUTDOWN, NOT_RUNNING -> {
                return Status.down(state, "Kafka Streams is stopped (" + state + ")", totalDeaths);
            }
            default -> {
                // checked below
            }
        }
        if (pendingDeaths > 0) {
            return Status.down(state, bounded(lastDeath + "; its replacement is not running yet"), totalDeaths);
        }
        if (recentDeathsNs.size() >= maxDeaths) {
            return Status.down(
                    state,
                    bounded(recentDeathsNs.size() + " stream threads died within " + format(deathWindowNs)
                            + " (a crash loop); the last: " + lastDeath),
                    totalDeaths);
        }
        boolean starting = state == KafkaStreams.State.REBALANCING || state == KafkaStreams.State.CREATED;
        long notRunningFor = now - notRunningSinceNs;
        if (starting && notRunningFor > maxRebalancingNs) {
            return Status.down(
                    state,
                    state + " for " + format(notRunningFor) + ", more than " + format(maxRebalancingNs),
                    totalDeaths);
        }
        return Status.up(state, totalDeaths);
    }

    private String suffix() {
        return lastDeath == null ? "" : "; " + lastDeath;
    }

    private void prune(long now) {
        while (!recentDeathsNs.isEmpty() && now - recentDeathsNs.peekFirst() > deathWindowNs) {
            recentDeathsNs.removeFirst();
        }
    }

    /** The innermost cause, class and message: Kafka wraps what a processor threw in StreamsExceptions. */
    static String describe(Throwable cause) {
        if (cause == null) {
            return "an unknown error";
        }
        Throwable root = cause;
        for (int i = 0; i < 16 && root.getCause() != null && root.getCause() != root; i++) {
            root = root.getCause();
        }
        String message = root.getMessage();
        return root.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    }

    private static String bounded(String s) {
        return s.length() <= MAX_REASON ? s : s.substring(0, MAX_REASON) + "...";
    }

    private static String format(long nanos) {
        long s = Math.max(0, nanos / 1_000_000_000L);
        return s < 120 ? s + "s" : (s / 60) + "m" + (s % 60 == 0 ? "" : (s % 60) + "s");
    }
}
