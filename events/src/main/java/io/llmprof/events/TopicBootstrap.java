package io.llmprof.events;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;

/** Creates llmprof's topics when they are missing; every component calls it at start, so order does not matter. */
public final class TopicBootstrap {
    private TopicBootstrap() {}

    public static void ensureTopics(String bootstrapServers, int partitions, short replicationFactor) {
        ensureTopics(KafkaConnection.of(bootstrapServers), partitions, replicationFactor);
    }

    public static void ensureTopics(KafkaConnection kafka, int partitions, short replicationFactor) {
        try (Admin admin =
                Admin.create(kafka.clientConfig(Map.of(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000)))) {
            Set<String> existing = admin.listTopics().names().get(30, TimeUnit.SECONDS);
            List<NewTopic> missing = new ArrayList<>();
            for (String name : Topics.all()) {
                if (!existing.contains(name)) {
                    NewTopic t = new NewTopic(name, partitions, replicationFactor);
                    if (name.equals(Topics.HOST_BASELINES.name())) {
                        // one value per job, kept forever: the latest mark wins
                        t.configs(Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
                    }
                    missing.add(t);
                }
            }
            if (missing.isEmpty()) {
                return;
            }
            try {
                admin.createTopics(missing).all().get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating topics on " + kafka, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot create llmprof topics on " + kafka + ": " + e, e);
        }
    }
}
