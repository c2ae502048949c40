package io.llmprof.agent.checkpoint;

import io.llmprof.events.KafkaConnection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The identity of a topic: what a checkpoint's acknowledgements refer to. A broker reset or a re-created topic keeps
 * the name and changes the id, and what the checkpoint says was acknowledged is not there any more.
 */
public final class TopicIds {
    private static final Logger LOG = LoggerFactory.getLogger(TopicIds.class);

    private TopicIds() {}

    /** The topic's id, or null when Kafka does not say within 30 s (the checkpoint is then trusted as it is). */
    public static String of(KafkaConnection kafka, String topic) {
        try (Admin admin =
                Admin.create(kafka.clientConfig(Map.of(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000)))) {
            return admin.describeTopics(List.of(topic))
                    .allTopicNames()
                    .get(30, TimeUnit.SECONDS)
                    .get(topic)
                    .topicId()
                    .toString();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            LOG.warn("cannot read the id of {} ({}); the checkpoint is used as it is", topic, e.toString());
            return null;
        }
    }
}
