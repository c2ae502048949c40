package io.llmprof.dashboard.feed;

import static io.llmprof.dashboard.Fixtures.hardware;
import static io.llmprof.dashboard.Fixtures.pass;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.llmprof.dashboard.metrics.DashboardMeters;
import io.llmprof.dashboard.store.PassLookup;
import io.llmprof.dashboard.store.PassStore;
import io.llmprof.dashboard.store.StoreLimits;
import io.llmprof.events.Topics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class TopicFeedTest {
    private static final Duration POLL = Duration.ofMillis(20);
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final BlockingMockConsumer consumer = new BlockingMockConsumer();
    private final PassStore store = new PassStore(StoreLimits.defaults());
    private final TopicFeed feed = new TopicFeed(
            consumer,
            new FeedHandler(store, new DashboardMeters(new SimpleMeterRegistry(), 8)),
            POLL,
            Duration.ofMinutes(5),
            Clock.systemUTC());

    @AfterEach
    void closeFeed() {
        feed.close();
    }

    @Test
    void readsEveryPartitionOfItsTopicsFromTheBeginning() {
        createTopics();
        feed.start();

        await().atMost(WAIT).until(() -> feed.status().up());

        assertThat(consumer.assignment()).hasSize(TopicFeed.TOPICS.size());
        assertThat(feed.status().assignedPartitions()).isEqualTo(TopicFeed.TOPICS.size());
    }

    @Test
    void anUnreadableRecordIsCountedAndTheFeedGoesOn() {
        createTopics();
        feed.start();
        await().atMost(WAIT).until(() -> feed.status().up());

        consumer.addRecord(FeedHandlerTest.raw(Topics.PASSES.name(), "{broken"));
        consumer.addRecord(FeedHandlerTest.record(Topics.PASSES, pass("job", "0", 1), 1));

        await().atMost(WAIT).until(() -> feed.status().records() == 1);
        assertThat(store.pass("job/0", 1)).isInstanceOf(PassLookup.Found.class);
        assertThat(feed.status().badRecords()).isEqualTo(1);
        assertThat(feed.status().up()).isTrue();
    }

    @Test
    void readsWhereEachRankRanAndCountsAnUnreadableHardwareRecord() {
        createTopics();
        feed.start();
        await().atMost(WAIT).until(() -> feed.status().up());

        consumer.addRecord(FeedHandlerTest.raw(Topics.RANK_HARDWARE.name(), "{broken"));
        consumer.addRecord(FeedHandlerTest.record(Topics.RANK_HARDWARE, hardware("job", "0", 0), 1));

        await().atMost(WAIT).until(() -> feed.status().records() == 1);
        assertThat(store.hardware().get("job/0")).contains(hardware("job", "0", 0));
        assertThat(feed.status().badRecords()).isEqualTo(1);
        assertThat(feed.status().up()).isTrue();
    }

    @Test
    void saysItIsCatchingUpUntilItReadWhatTheTopicsHeldAtStart() {
        createTopics();
        TopicPartition passes = new TopicPartition(Topics.PASSES.name(), 0);
        consumer.updateEndOffsets(Map.of(passes, 2L)); // two records retained before the dashboard started
        feed.start();
        await().atMost(WAIT).until(() -> feed.status().up());
        assertThat(feed.status().catchingUp()).isTrue();
        assertThat(feed.status().offsetsBehind()).isEqualTo(2);

        consumer.addRecord(FeedHandlerTest.record(Topics.PASSES, pass("job", "0", 1), 0));
        await().atMost(WAIT).until(() -> feed.status().records() == 1);
        assertThat(feed.status().catchingUp()).isTrue();
        assertThat(feed.status().offsetsBehind()).isEqualTo(1);

        consumer.addRecord(FeedHandlerTest.record(Topics.PASSES, pass("job", "0", 2), 1));
        await().atMost(WAIT).until(() -> !feed.status().catchingUp());
        assertThat(feed.status().offsetsBehind()).isZero();
        assertThat(feed.status().records()).isEqualTo(2);
    }

    @Test
    void emptyTopicsMeanNothingToCatchUp() {
        createTopics();
        feed.start();
        await().atMost(WAIT).until(() -> feed.status().up());
        assertThat(feed.status().catchingUp()).isFalse();
    }

    @Test
    void waitsForTopicsThatDoNotExistYet() {
        feed.start();
        await().atMost(WAIT).until(() -> feed.status().state() == FeedStatus.State.WAITING_FOR_TOPICS);
        assertThat(feed.status().up()).isFalse();

        createTopics();

        await().atMost(WAIT).until(() -> feed.status().up());
    }

    @Test
    void retriesAfterAFailedPoll() {
        createTopics();
        feed.start();
        await().atMost(WAIT).until(() -> feed.status().up());

        consumer.setPollException(new KafkaException("broker gone"));

        await().atMost(WAIT).until(() -> feed.status().lastError().isPresent());
        await().atMost(WAIT).until(() -> feed.status().up());
        assertThat(feed.status().lastError()).isEmpty();
    }

    @Test
    void closeStopsThePollLoopAndClosesTheConsumer() {
        createTopics();
        feed.start();
        await().atMost(WAIT).until(() -> feed.status().up());

        feed.close();

        assertThat(feed.status().state()).isEqualTo(FeedStatus.State.STOPPED);
        assertThat(consumer.closed()).isTrue();
    }

    @Test
    void closeBeforeStartClosesTheConsumer() {
        feed.close();

        assertThat(consumer.closed()).isTrue();
        assertThat(feed.status().state()).isEqualTo(FeedStatus.State.STOPPED);
    }

    private void createTopics() {
        Map<TopicPartition, Long> beginnings = new HashMap<>();
        for (String topic : TopicFeed.TOPICS) {
            consumer.updatePartitions(topic, List.of(new PartitionInfo(topic, 0, null, null, null)));
            beginnings.put(new TopicPartition(topic, 0), 0L);
        }
        consumer.updateBeginningOffsets(beginnings);
        consumer.updateEndOffsets(beginnings);
    }

    /** MockConsumer returns from an empty poll at once; a real one waits up to the timeout. */
    private static final class BlockingMockConsumer extends MockConsumer<byte[], byte[]> {
        BlockingMockConsumer() {
            super("earliest");
        }

        @Override
        public ConsumerRecords<byte[], byte[]> poll(Duration timeout) {
            ConsumerRecords<byte[], byte[]> records = super.poll(timeout);
            if (records.isEmpty()) {
                LockSupport.parkNanos(timeout.toNanos());
            }
            return records;
        }
    }
}
