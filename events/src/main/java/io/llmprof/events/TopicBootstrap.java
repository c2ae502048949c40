package io.llmprof.events;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates llmprof's topics when they are missing, laid out as a {@link TopicLayout} says; every component calls it
 * at start with the same defaults, so order does not matter. An existing topic is never changed: one whose
 * partition count differs from the layout, or which has fewer replicas, gets a WARN naming both.
 */
public final class TopicBootstrap {
    private static final Logger LOG = LoggerFactory.getLogger(TopicBootstrap.class);
    private static final long TIMEOUT_S = 30;
    /** How long {@link #awaitServed} waits for partitions' leaders to serve them. */
    static final long SERVED_WAIT_S = 15;

    private TopicBootstrap() {}

    /**
     * What the cluster was found to be and what was applied.
     *
     * @param brokers brokers the cluster had
     * @param replicationFactor replication factor of created topics (and for the streams app's internal ones)
     * @param minInsyncReplicas {@code min.insync.replicas} set on created topics, or null (the broker's default)
     * @param created topics this call created
     * @param mismatches one line per existing topic whose layout differs from the configured one (also logged)
     */
    public record Applied(
            int brokers,
            short replicationFactor,
            Short minInsyncReplicas,
            List<String> created,
            List<String> mismatches) {
        public Applied {
            created = List.copyOf(created);
            mismatches = List.copyOf(mismatches);
        }
    }

    public static Applied ensureTopics(String bootstrapServers, TopicLayout layout) {
        return ensureTopics(KafkaConnection.of(bootstrapServers), layout);
    }

    public static Applied ensureTopics(KafkaConnection kafka, TopicLayout layout) {
        try (Admin admin =
                Admin.create(kafka.clientConfig(Map.of(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000)))) {
            int brokers = admin.describeCluster()
                    .nodes()
                    .get(TIMEOUT_S, TimeUnit.SECONDS)
                    .size();
            short rf = layout.effectiveReplicationFactor(brokers);
            Short minIsr = layout.effectiveMinInsyncReplicas(rf);
            if (minIsr != null && minIsr > rf) {
                throw new IllegalArgumentException("min.insync.replicas " + minIsr + " is above the replication factor "
                        + rf + ": no write could succeed");
            }
            Set<String> existing = admin.listTopics().names().get(TIMEOUT_S, TimeUnit.SECONDS);
            List<NewTopic> missing = new ArrayList<>();
            List<String> check = new ArrayList<>();
            for (Topic<?, ?> topic : Topics.registry()) {
                if (existing.contains(topic.name())) {
                    check.add(topic.name());
                    continue;
                }
                NewTopic t = new NewTopic(topic.name(), layout.partitions(Topics.family(topic)), rf);
                Map<String, String> configs = new HashMap<>();
                if (topic == Topics.HOST_BASELINES) {
                    // one value per job, kept forever: the latest mark wins
                    configs.put(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT);
                }
                if (minIsr != null) {
                    configs.put(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, Short.toString(minIsr));
                }
                missing.add(t.configs(configs));
            }
            List<String> created = new ArrayList<>();
            if (!missing.isEmpty()) {
                if (rf > brokers) {
                    throw new IllegalStateException("replication factor " + rf + " needs " + rf
                            + " brokers, the cluster has " + brokers + " (--replication-factor)");
                }
                for (Map.Entry<String, KafkaFuture<Void>> f :
                        admin.createTopics(missing).values().entrySet()) {
                    try {
                        f.getValue().get(TIMEOUT_S, TimeUnit.SECONDS);
                        created.add(f.getKey());
                    } catch (ExecutionException e) {
                        if (!(e.getCause() instanceof TopicExistsException)) {
                            throw e;
                        }
                        // another component created it meanwhile: check its layout like any existing one
                        check.add(f.getKey());
                    }
                }
                LOG.info(
                        "created {} llmprof topic(s): partitions {}, replication factor {}, min.insync.replicas {}"
                                + " ({} broker(s))",
                        created.size(),
                        layout.partitionsSpec(),
                        rf,
                        minIsr == null ? "broker default" : minIsr,
                        brokers);
            }
            List<String> mismatches = check.isEmpty() ? List.of() : mismatches(admin, check, layout, rf);
            awaitServed(admin, Topics.all(), kafka);
            return new Applied(brokers, rf, minIsr, created, mismatches);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating topics on " + kafka, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot create llmprof topics on " + kafka + ": " + e, e);
        }
    }

    /**
     * Waits (at most {@value #SERVED_WAIT_S} s) until the leader of every partition of {@code names} serves it: asks each
     * for its latest offset, which the admin client retries while a leader answers NOT_LEADER_OR_FOLLOWER. A broker
     * names a new partition's leader in its metadata before that leader has created the partition; an idempotent
     * producer with several requests in flight can then have its first request refused and a later one appended,
     * and the first is refused as out of order for ever (KAFKA-15591, fixed in brokers from Kafka 4.5): with
     * the agent's unlimited delivery timeout that was a replay waiting without end, with a limited one, lost
     * records. A partition still not served at the deadline (its leader down) gets a WARN, never a failure.
     */
    static void awaitServed(Admin admin, Collection<String> names, KafkaConnection kafka) throws InterruptedException {
        try {
            Map<String, TopicDescription> described =
                    admin.describeTopics(names).allTopicNames().get(TIMEOUT_S, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetSpec> partitions = new HashMap<>();
            described.forEach((name, d) -> d.partitions()
                    .forEach(p -> partitions.put(new TopicPartition(name, p.partition()), OffsetSpec.latest())));
            admin.listOffsets(partitions).all().get(SERVED_WAIT_S, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            LOG.warn(
                    "not every partition of llmprof's topics on {} is served by its leader yet ({}); writes to such a"
                            + " partition wait for it",
                    kafka,
                    e.getCause() == null ? e.toString() : e.getCause().toString());
        }
    }

    /** A WARN line per existing topic laid out otherwise than configured: never changed, never silently. */
    private static List<String> mismatches(Admin admin, List<String> names, TopicLayout layout, short rf)
            throws InterruptedException, ExecutionException, TimeoutException {
        Map<String, TopicDescription> described =
                admin.describeTopics(names).allTopicNames().get(TIMEOUT_S, TimeUnit.SECONDS);
        List<String> lines = new ArrayList<>();
        for (String name : names) {
            TopicDescription d = described.get(name);
            Topic<?, ?> topic = Topics.byName(name).orElseThrow();
            int want = layout.partitions(Topics.family(topic));
            int have = d.partitions().size();
            int replicas = d.partitions().isEmpty()
                    ? rf
                    : d.partitions().get(0).replicas().size();
            List<String> diffs = new ArrayList<>();
            if (have != want) {
                diffs.add(have + " partition(s), the configured layout says " + want + " (--partitions "
                        + Topics.family(topic).optionName() + "=" + want + ")");
            }
            // Only fewer replicas matter: more happen when a broker was down while this component counted them.
            if (replicas < rf) {
                diffs.add("replication factor " + replicas + ", the configured one is " + rf);
            }
            if (!diffs.isEmpty()) {
                String line = "topic " + name + " exists with " + String.join(" and ", diffs)
                        + "; kept as it is (docs/runbook.md, sizing partitions)";
                LOG.warn(line);
                lines.add(line);
            }
        }
        return lines;
    }
}
