package io.llmprof.agent.replay;

import io.llmprof.events.KafkaConnection;
import io.llmprof.events.Topics;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The identity of {@code llmprof.trace-events}: what a checkpoint's acknowledgements refer to. */
final class TopicIds {
    private static final Logger LOG = LoggerFactory.getLogger(TopicIds.class);

    private TopicIds() {}

    /** The topic's id, or null when Kafka does not say within 30 s (the checkpoint is then trusted as it is). */
    static String traceEvents(KafkaConnection kafka) {
        try (Admin admin =
                Admin.create(kafka.clientConfig(Map.of(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000)))) {
            return admin.describeTopics(List.of(Topics.TRACE_EVENTS.name()))
                    .allTopicNames()
                    .get(30, TimeUnit.SECONDS)
                    .get(Topics.TRACE_EVENTS.name())
                    .topicId()
                    .toString();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            LOG.warn("cannot read the id of {} ({}); the checkpoint is used as it is", Topics.TRACE_EVENTS.name(), e);
            return null;
        }
    }
}
