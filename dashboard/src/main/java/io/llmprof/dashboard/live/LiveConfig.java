package io.llmprof.dashboard.live;

import java.time.Duration;
import java.util.Objects;

/**
 * Bounds and rhythm of {@link LiveHub}.
 *
 * @param flushInterval how often pending changes leave as events (at most one {@code pass} and one {@code
 *     changed} event per interval)
 * @param keepAlive how long a stream may stay silent before a comment line is sent (proxies and browsers drop
 *     silent connections)
 * @param maxClients streams served at once; one more is answered 503
 * @param queueCapacity events waiting per client; a client that lets more pile up is disconnected (an
 *     EventSource reconnects by itself and gets a fresh {@code hello})
 * @param maxPassesPerFlush pass summaries in one {@code pass} event; older ones are dropped and counted
 */
public record LiveConfig(
        Duration flushInterval, Duration keepAlive, int maxClients, int queueCapacity, int maxPassesPerFlush) {
    public static final Duration DEFAULT_FLUSH_INTERVAL = Duration.ofMillis(500);
    public static final Duration DEFAULT_KEEP_ALIVE = Duration.ofSeconds(15);
    public static final int DEFAULT_MAX_CLIENTS = 64;
    public static final int DEFAULT_QUEUE_CAPACITY = 64;
    public static final int DEFAULT_MAX_PASSES_PER_FLUSH = 256;

    public LiveConfig {
        Objects.requireNonNull(flushInterval, "flushInterval");
        Objects.requireNonNull(keepAlive, "keepAlive");
        if (flushInterval.isNegative() || flushInterval.isZero() || keepAlive.isNegative() || keepAlive.isZero()) {
            throw new IllegalArgumentException("flushInterval and keepAlive must be positive");
        }
        if (maxClients < 1 || queueCapacity < 2 || maxPassesPerFlush < 1) {
            throw new IllegalArgumentException("maxClients and maxPassesPerFlush must be 1 or more, queueCapacity 2 or"
                    + " more (got " + maxClients + ", " + maxPassesPerFlush + ", " + queueCapacity + ")");
        }
    }

    public static LiveConfig defaults() {
        return new LiveConfig(
                DEFAULT_FLUSH_INTERVAL,
                DEFAULT_KEEP_ALIVE,
                DEFAULT_MAX_CLIENTS,
                DEFAULT_QUEUE_CAPACITY,
                DEFAULT_MAX_PASSES_PER_FLUSH);
    }

    public LiveConfig withFlushInterval(Duration value) {
        return new LiveConfig(value, keepAlive, maxClients, queueCapacity, maxPassesPerFlush);
    }

    public LiveConfig withKeepAlive(Duration value) {
        return new LiveConfig(flushInterval, value, maxClients, queueCapacity, maxPassesPerFlush);
    }

    public LiveConfig withMaxClients(int value) {
        return new LiveConfig(flushInterval, keepAlive, value, queueCapacity, maxPassesPerFlush);
    }

    public LiveConfig withQueueCapacity(int value) {
        return new LiveConfig(flushInterval, keepAlive, maxClients, value, maxPassesPerFlush);
    }

    public LiveConfig withMaxPassesPerFlush(int value) {
        return new LiveConfig(flushInterval, keepAlive, maxClients, queueCapacity, value);
    }
}
