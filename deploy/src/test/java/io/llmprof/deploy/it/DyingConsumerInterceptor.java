package io.llmprof.deploy.it;

import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * Test hook on the streams app's main consumer ({@code main.consumer.interceptor.classes}): once armed, the next
 * poll that returns records throws an {@link Error}, which no record handler catches, so the stream thread dies
 * as it would of a bug. The replacement thread's consumer is then held in its constructor until the test lets it
 * go, so that the test sees {@code /health} DOWN for as long as it needs (bounded: 60 s).
 */
public final class DyingConsumerInterceptor implements ConsumerInterceptor<byte[], byte[]> {
    /** What kills the thread: an Error, so that Kafka's record-level handlers do not catch it. */
    public static final class InjectedDeath extends Error {
        InjectedDeath() {
            super("injected by the test");
        }
    }

    private static final AtomicInteger deaths = new AtomicInteger();
    private static volatile CountDownLatch replacementGate = new CountDownLatch(0);
    private static volatile boolean holdNext;

    /** The next poll with records kills its thread; the consumer created after it waits for {@link #release}. */
    static void arm() {
        replacementGate = new CountDownLatch(1);
        holdNext = true;
        deaths.set(1);
    }

    static void release() {
        replacementGate.countDown();
    }

    public DyingConsumerInterceptor() throws InterruptedException {
        if (holdNext && deaths.get() == 0) {
            holdNext = false;
            replacementGate.await(60, TimeUnit.SECONDS);
        }
    }

    @Override
    public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
        if (!records.isEmpty() && deaths.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new InjectedDeath();
        }
        return records;
    }

    @Override
    public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {}

    @Override
    public void close() {}

    @Override
    public void configure(Map<String, ?> configs) {}
}
