package io.llmprof.dashboard.feed;

import io.llmprof.events.KafkaConnection;
import io.llmprof.events.Topics;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the dashboard's topics on one background thread and hands every record to a {@link FeedHandler}.
 *
 * <p>Manual assignment of every partition from the beginning, no consumer group, no commits: the store
 * is in memory, so each dashboard (re)start must replay what the topics retain, and several dashboards
 * each see everything. {@code read_committed}: records of aborted Streams transactions never show.
 */
public final class TopicFeed implements AutoCloseable {
    public static final List<String> TOPICS = topics();

    private static List<String> topics() {
        List<String> topics = new ArrayList<>(List.of(
                Topics.PASSES.name(),
                Topics.LAYERS.name(),
                Topics.ANOMALIES.name(),
                Topics.DLQ.name(),
                Topics.CROSS_RANK.name(),
                Topics.HOST_STEPS.name(),
                Topics.HOST_VERDICTS.name(),
                Topics.HOST_BASELINES.name(),
                Topics.RANK_HARDWARE.name()));
        topics.addAll(Topics.serviceOutputs());
        return List.copyOf(topics);
    }

    private static final Logger LOG = LoggerFactory.getLogger(TopicFeed.class);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration METADATA_TIMEOUT = Duration.ofSeconds(5);

    private final Consumer<byte[], byte[]> consumer;
    private final FeedHandler handler;
    private final Duration pollTimeout;
    private final Duration partitionRefresh;
    private final Clock clock;
    private final Thread thread;
    private final CountDownLatch closing = new CountDownLatch(1);

    private volatile FeedStatus.State state = FeedStatus.State.STARTING;
    private volatile int assignedPartitions;
    private volatile long records;
    private volatile long badRecords;
    private volatile Instant lastPoll;
    private volatile String lastError;
    /** Partitions read from their beginning, and the committed end each had then: until reached, catching up. */
    private final Map<TopicPartition, Long> catchUpTo = new HashMap<>();

    private volatile long offsetsBehind;
    private volatile boolean caughtUp;
    private long catchUpStartNs;

    /**
     * @param consumer used by the feed thread only, closed by it
     * @param partitionRefresh how often to look for partitions added to the topics
     */
    public TopicFeed(
            Consumer<byte[], byte[]> consumer,
            FeedHandler handler,
            Duration pollTimeout,
            Duration partitionRefresh,
            Clock clock) {
        this.consumer = Objects.requireNonNull(consumer, "consumer");
        this.handler = Objects.requireNonNull(handler, "handler");
        this.pollTimeout = Objects.requireNonNull(pollTimeout, "pollTimeout");
        this.partitionRefresh = Objects.requireNonNull(partitionRefresh, "partitionRefresh");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.thread = new Thread(this::run, "llmprof-dashboard-feed");
        this.thread.setDaemon(true);
    }

    /** A read_committed byte-array consumer without group for {@code bootstrapServers}. */
    public static Consumer<byte[], byte[]> createConsumer(String bootstrapServers) {
        return createConsumer(KafkaConnection.of(bootstrapServers));
    }

    /** As {@link #createConsumer(String)}, with the connection's client settings. */
    public static Consumer<byte[], byte[]> createConsumer(KafkaConnection kafka) {
        return new KafkaConsumer<>(
                kafka.clientConfig(Map.of(
                        ConsumerConfig.CLIENT_ID_CONFIG,
                        "llmprof-dashboard",
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                        "read_committed",
                        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                        false,
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                        "earliest",
                        ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG,
                        false)),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
    }

    public TopicFeed start() {
        thread.start();
        return this;
    }

    public FeedStatus status() {
        return new FeedStatus(
                state,
                assignedPartitions,
                records,
                badRecords,
                Optional.ofNullable(lastPoll),
                Optional.ofNullable(lastError),
                !caughtUp && assignedPartitions > 0,
                offsetsBehind);
    }

    /** Stops the poll loop (wakeup), waits for the thread, which closes the consumer. */
    @Override
    public void close() {
        closing.countDown();
        consumer.wakeup();
        if (thread.isAlive() && Thread.currentThread() != thread) {
            try {
                thread.join(CLOSE_TIMEOUT.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                LOG.warn("dashboard feed thread did not stop within {}", CLOSE_TIMEOUT);
            }
        } else if (!thread.isAlive() && state != FeedStatus.State.STOPPED) {
            // Never started: the consumer is still ours to close.
            consumer.close(CLOSE_TIMEOUT);
            state = FeedStatus.State.STOPPED;
        }
    }

    private void run() {
        Instant nextRefresh = Instant.MIN;
        try {
            while (closing.getCount() > 0) {
                try {
                    if (!clock.instant().isBefore(nextRefresh)) {
                        refreshAssignment();
                        nextRefresh = clock.instant().plus(assignedPartitions == 0 ? pollTimeout : partitionRefresh);
                    }
                    if (assignedPartitions == 0) {
                        state = FeedStatus.State.WAITING_FOR_TOPICS;
                        pause(pollTimeout);
                        continue;
                    }
                    ConsumerRecords<byte[], byte[]> batch = consumer.poll(pollTimeout);
                    lastPoll = clock.instant();
                    lastError = null;
                    state = FeedStatus.State.RUNNING;
                    for (ConsumerRecord<byte[], byte[]> record : batch) {
                        if (handler.handle(record)) {
                            records++;
                        } else {
                            badRecords++;
                        }
                    }
                    if (!catchUpTo.isEmpty()) {
                        checkCatchUp();
                    }
                } catch (WakeupException e) {
                    if (closing.getCount() > 0) {
                        LOG.debug("spurious wakeup of the dashboard feed");
                    }
                } catch (RuntimeException e) {
                    // The consumer retries transient errors itself; what reaches here is logged and retried
                    // slowly so a broken broker does not make a hot loop.
                    lastError = e.toString();
                    state = FeedStatus.State.RETRYING;
                    LOG.warn("dashboard feed: {} (retrying)", e.toString());
                    pause(Duration.ofSeconds(1));
                }
            }
        } finally {
            try {
                consumer.close(CLOSE_TIMEOUT);
            } catch (RuntimeException e) {
                LOG.warn("dashboard feed: closing the consumer failed: {}", e.toString());
            }
            state = FeedStatus.State.STOPPED;
        }
    }

    private void refreshAssignment() {
        List<TopicPartition> all = new ArrayList<>();
        for (String topic : TOPICS) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, METADATA_TIMEOUT);
            if (infos != null) {
                infos.forEach(info -> all.add(new TopicPartition(info.topic(), info.partition())));
            }
        }
        Set<TopicPartition> current = consumer.assignment();
        if (current.containsAll(all)) {
            return;
        }
        Set<TopicPartition> added = new HashSet<>(all);
        added.removeAll(current);
        consumer.assign(all);
        // Partitions already assigned keep their positions; new ones are read from their beginning.
        consumer.seekToBeginning(added);
        LOG.info("dashboard feed reads {} partitions ({} new)", all.size(), added.size());
        // What the topics held at this moment is history to replay: until the feed reaches it, the views are
        // incomplete, and /health and the page say so (read_committed: the ends are the last stable offsets).
        boolean first = catchUpStartNs == 0;
        Map<TopicPartition, Long> ends;
        try {
            ends = consumer.endOffsets(added, METADATA_TIMEOUT);
        } catch (RuntimeException e) {
            LOG.warn("dashboard feed: cannot read where the topics end ({}): not tracking the catch-up", e.toString());
            ends = Map.of();
        }
        ends.forEach((tp, end) -> {
            if (end != null && end > 0) {
                catchUpTo.put(tp, end);
            }
        });
        if (first) {
            catchUpStartNs = System.nanoTime();
            checkCatchUp();
            if (!caughtUp) {
                LOG.info(
                        "dashboard catching up: {} offsets retained on {} partitions (records and transaction markers) to"
                                + " read before its views are complete",
                        offsetsBehind,
                        catchUpTo.size());
            }
        }
        // published last: a status that shows the partitions shows what is left to read of them
        assignedPartitions = all.size();
    }

    /** Drops the partitions whose position reached their end at assignment; the feed caught up when none is left. */
    private void checkCatchUp() {
        long behind = 0;
        for (Iterator<Map.Entry<TopicPartition, Long>> it = catchUpTo.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<TopicPartition, Long> e = it.next();
            long position = consumer.position(e.getKey(), METADATA_TIMEOUT);
            if (position >= e.getValue()) {
                it.remove();
            } else {
                behind += e.getValue() - position;
            }
        }
        offsetsBehind = behind;
        if (catchUpTo.isEmpty() && !caughtUp) {
            caughtUp = true;
            LOG.info(
                    "dashboard caught up with the topics: {} records read in {} ms",
                    records + badRecords,
                    (System.nanoTime() - catchUpStartNs) / 1_000_000);
        }
    }

    private void pause(Duration duration) {
        try {
            closing.await(duration.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closing.countDown();
        }
    }
}
