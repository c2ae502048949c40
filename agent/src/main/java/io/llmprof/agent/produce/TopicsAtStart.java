package io.llmprof.agent.produce;

import io.llmprof.events.KafkaConnection;
import io.llmprof.events.TopicBootstrap;
import io.llmprof.events.TopicLayout;
import java.time.Duration;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates or checks llmprof's topics when an agent starts, waiting out a broker that does not answer yet, as the
 * sends that follow do (issue 18): without {@code --give-up-after} it waits without a limit, saying "waiting for
 * Kafka (N s)" at each try; with it, it gives up with a {@link GaveUpException} once the budget is spent. Any other
 * failure (refused credentials, a layout the cluster cannot hold) is thrown at once.
 */
public final class TopicsAtStart {
    private static final Logger LOG = LoggerFactory.getLogger(TopicsAtStart.class);
    static final Duration FIRST_BACKOFF = Duration.ofSeconds(1);
    static final Duration MAX_BACKOFF = Duration.ofSeconds(10);

    private TopicsAtStart() {}

    /** @param giveUpAfter null: wait without a limit */
    public static TopicBootstrap.Applied ensure(KafkaConnection kafka, TopicLayout layout, Duration giveUpAfter) {
        return ensure(() -> TopicBootstrap.ensureTopics(kafka, layout), kafka.toString(), giveUpAfter, FIRST_BACKOFF);
    }

    static TopicBootstrap.Applied ensure(
            Supplier<TopicBootstrap.Applied> attempt, String where, Duration giveUpAfter, Duration firstBackoff) {
        long startNs = System.nanoTime();
        Duration backoff = firstBackoff;
        while (true) {
            try {
                return attempt.get();
            } catch (RuntimeException e) {
                if (!noAnswer(e)) {
                    throw e;
                }
                long waitedMs = (System.nanoTime() - startNs) / 1_000_000;
                if (giveUpAfter != null && waitedMs >= giveUpAfter.toMillis()) {
                    throw new GaveUpException(
                            "gave up waiting for Kafka at " + where + " after " + waitedMs / 1000 + " s"
                                    + " (--give-up-after " + giveUpAfter.toSeconds() + "s): it did not answer to create"
                                    + " or check llmprof's topics; nothing was sent",
                            e);
                }
                LOG.warn(
                        "waiting for Kafka ({} s): {} did not answer to create or check llmprof's topics; retrying{}",
                        waitedMs / 1000,
                        where,
                        giveUpAfter == null ? " without a limit (--give-up-after to stop)" : "");
                try {
                    Thread.sleep(backoff.toMillis());
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new GaveUpException("interrupted while waiting for Kafka at " + where, ie);
                }
                backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
            }
        }
    }

    /** Kafka did not answer in time (down, unreachable, starting): worth waiting for, unlike a refusal. */
    static boolean noAnswer(Throwable e) {
        int depth = 0;
        for (Throwable c = e; c != null && depth++ < 16; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof org.apache.kafka.common.errors.TimeoutException
                    || c instanceof java.util.concurrent.TimeoutException) {
                return true;
            }
        }
        return false;
    }
}
