package io.llmprof.dashboard.live;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.llmprof.dashboard.feed.FeedListener;
import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.events.Json;
import io.llmprof.events.PassRecord;
import io.llmprof.events.Topics;
import io.llmprof.events.view.PassView;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns applied records into Server-Sent Events for the web page. The feed thread only counts and keeps
 * (under a lock held for a few field updates, never while a client is written to); a flusher thread turns
 * what piled up into at most one {@code pass} and one {@code changed} event per {@link
 * LiveConfig#flushInterval()}, serializes each once and offers it to every client's bounded queue. A client
 * whose queue is full is ended, so a slow browser costs its own stream, never the feed or the other clients.
 *
 * <p>Events (data is one line of JSON):
 *
 * <ul>
 *   <li>{@code hello}, first on every stream: {@code {"seq": N, "counts": {"<topic>": records applied since the
 *       dashboard started, ...}}}, N the seq of the last {@code changed} event sent (0 before the first)
 *   <li>{@code pass}: {@code {"passes": [item, ...], "dropped": n}}, items oldest first, each the item of {@code
 *       GET /api/ranks/{rank}/passes} preceded by {@code "key", "job", "rank", "run"}; at most {@link
 *       LiveConfig#maxPassesPerFlush()} (the newest), {@code dropped} the older ones left out (0 usually)
 *   <li>{@code changed}: {@code {"seq": N, "topics": {"<topic>": records applied since the last flush}}}, N
 *       counting flushes from 1; sent after the flush's {@code pass} event
 * </ul>
 */
public final class LiveHub implements FeedListener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LiveHub.class);
    private static final String PASSES_TOPIC = Topics.PASSES.name();

    private final LiveConfig config;
    private final DashboardMeters meters;
    private final Set<LiveClient> clients = ConcurrentHashMap.newKeySet();
    private final Object lock = new Object();
    // Guarded by lock: what the feed applied since the last flush, and totals for hello.
    private final Map<String, Long> pendingTopics = new TreeMap<>();
    private final Map<String, Long> totals = new TreeMap<>();
    private final ArrayDeque<PassRecord> pendingPasses = new ArrayDeque<>();
    private long droppedPasses;
    private long seq;
    private boolean closed;
    private ScheduledExecutorService flusher;

    public LiveHub(LiveConfig config, DashboardMeters meters) {
        this.config = Objects.requireNonNull(config, "config");
        this.meters = Objects.requireNonNull(meters, "meters");
        meters.liveClients(clients::size);
    }

    public LiveConfig config() {
        return config;
    }

    /** Starts flushing every {@link LiveConfig#flushInterval()} on a daemon thread. */
    public LiveHub start() {
        synchronized (lock) {
            if (closed || flusher != null) {
                return this;
            }
            flusher = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "llmprof-dashboard-live");
                t.setDaemon(true);
                return t;
            });
            long every = config.flushInterval().toNanos();
            flusher.scheduleWithFixedDelay(this::flushQuietly, every, every, TimeUnit.NANOSECONDS);
        }
        return this;
    }

    /** On the feed thread: O(1) under the lock, nothing else. */
    @Override
    public void applied(String topic, Object value) {
        synchronized (lock) {
            count(topic, 1);
            pend(topic, value);
        }
    }

    /** A pack's records: counted at once, under one lock (a service pack holds about a thousand). */
    @Override
    public void appliedAll(String topic, List<?> values) {
        if (values.isEmpty()) {
            return; // as no record: no topic counted at 0
        }
        synchronized (lock) {
            count(topic, values.size());
            if (PASSES_TOPIC.equals(topic)) {
                for (Object value : values) {
                    pend(topic, value);
                }
            }
        }
    }

    private void count(String topic, long records) {
        pendingTopics.merge(topic, records, Long::sum);
        totals.merge(topic, records, Long::sum);
    }

    private void pend(String topic, Object value) {
        if (value instanceof PassRecord pass && PASSES_TOPIC.equals(topic)) {
            if (pendingPasses.size() >= config.maxPassesPerFlush()) {
                pendingPasses.pollFirst();
                droppedPasses++;
            }
            pendingPasses.addLast(pass);
        }
    }

    /**
     * A new stream, its {@code hello} already queued; empty when {@link LiveConfig#maxClients()} streams are
     * open or the hub is closed.
     */
    public Optional<LiveClient> subscribe() {
        LiveClient client = new LiveClient(this, config.queueCapacity());
        synchronized (lock) {
            if (closed || clients.size() >= config.maxClients()) {
                return Optional.empty();
            }
            ObjectNode node = Json.mapper().createObjectNode().put("seq", seq);
            ObjectNode counts = node.putObject("counts");
            totals.forEach(counts::put);
            // Queued before the client joins, so hello is first whatever a concurrent flush sends; joined under
            // the lock so that the size check above holds.
            client.offer(new LiveEvent(LiveEvent.HELLO, write(node)));
            clients.add(client);
        }
        return Optional.of(client);
    }

    public int clients() {
        return clients.size();
    }

    /** Sends what piled up since the last flush, if anything did. The flusher calls it; tests may too. */
    public void flush() {
        List<PassRecord> passes;
        long dropped;
        Map<String, Long> topics;
        long n;
        synchronized (lock) {
            if (pendingTopics.isEmpty()) {
                return;
            }
            passes = new ArrayList<>(pendingPasses);
            dropped = droppedPasses;
            topics = new TreeMap<>(pendingTopics);
            pendingPasses.clear();
            droppedPasses = 0;
            pendingTopics.clear();
            n = ++seq;
        }
        if (!passes.isEmpty() || dropped > 0) {
            broadcast(new LiveEvent(LiveEvent.PASS, passEvent(passes, dropped)));
        }
        ObjectNode changed = Json.mapper().createObjectNode().put("seq", n);
        ObjectNode counts = changed.putObject("topics");
        topics.forEach(counts::put);
        broadcast(new LiveEvent(LiveEvent.CHANGED, write(changed)));
    }

    /** Called by a stream's writer after it sent an event (the meter counts events that left). */
    public void sent(LiveEvent event) {
        meters.liveEvent(event.name());
    }

    /** Ends every stream (their writers return at once, the browsers reconnect elsewhere or later). */
    public void disconnectAll() {
        for (LiveClient client : List.copyOf(clients)) {
            client.end("closed", false);
        }
    }

    /** Stops flushing and ends every stream; later subscriptions are refused. */
    @Override
    public void close() {
        ScheduledExecutorService toStop;
        synchronized (lock) {
            closed = true;
            toStop = flusher;
            flusher = null;
        }
        if (toStop != null) {
            toStop.shutdownNow();
        }
        disconnectAll();
    }

    void remove(LiveClient client) {
        clients.remove(client);
    }

    private void broadcast(LiveEvent event) {
        for (LiveClient client : clients) {
            if (!client.offer(event)) {
                LOG.debug("live client fell {} events behind: disconnected", config.queueCapacity());
                client.end("overflow", true);
            }
        }
    }

    private void flushQuietly() {
        try {
            flush();
        } catch (RuntimeException e) {
            // A failed flush must not cancel the schedule (a thrown exception would).
            LOG.warn("live flush failed: {}", e.toString(), e);
        }
    }

    /** The pass event's data; items as GET /api/ranks/{rank}/passes lists them, plus their identity. */
    static String passEvent(List<PassRecord> passes, long dropped) {
        ObjectNode node = Json.mapper().createObjectNode();
        ArrayNode items = node.putArray("passes");
        for (PassRecord pass : passes) {
            ObjectNode item = items.addObject();
            item.put("key", pass.key()).put("job", pass.job()).put("rank", pass.rank());
            if (pass.run() != null) {
                item.put("run", pass.run());
            }
            item.setAll((ObjectNode)
                    Json.mapper().valueToTree(PassView.of(pass, List.of()).withoutLayers()));
        }
        node.put("dropped", dropped);
        return write(node);
    }

    private static String write(ObjectNode node) {
        try {
            return Json.mapper().writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write a live event: " + e.getMessage(), e);
        }
    }
}
