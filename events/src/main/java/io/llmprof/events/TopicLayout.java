package io.llmprof.events;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * How llmprof's topics are laid out when a component creates them: partitions per {@link Topics.Family}, the
 * replication factor and {@code min.insync.replicas}. Every component (agent, streams app, dashboard, demo) starts
 * from {@link #defaults()} and the same three options, so whichever creates the topics first creates the same
 * layout.
 *
 * @param inputPartitions partitions of the input topics (trace and service events, keyed by rank or instance): the
 *     most streams instances that can share the work
 * @param outputPartitions partitions of the analysis outputs (passes, layers, host, service, cross-rank, anomalies)
 * @param deadLetterPartitions partitions of the dead-letter topic
 * @param baselinePartitions partitions of the compacted baselines topic (one tiny record per job)
 * @param replicationFactor replicas per partition; null = {@code min(3, brokers in the cluster)}
 * @param minInsyncReplicas the topics' {@code min.insync.replicas}; null = 2 when the replication factor is 3 or
 *     more, else the broker's default
 */
public record TopicLayout(
        int inputPartitions,
        int outputPartitions,
        int deadLetterPartitions,
        int baselinePartitions,
        Short replicationFactor,
        Short minInsyncReplicas) {

    /**
     * Input and output partitions: up to 3 streams instances share the work (a rank's events stay on one partition,
     * so more partitions than ranks buy nothing); the agent's old default, and the count production sizing starts
     * from (docs/runbook.md).
     */
    public static final int DEFAULT_PARTITIONS = 3;
    /** Replication factor when not set: 3, or fewer when the cluster has fewer brokers. */
    public static final short DEFAULT_MAX_REPLICATION_FACTOR = 3;

    /** The help text of {@code --partitions}, the same in every command. */
    public static final String PARTITIONS_HELP = "Partitions of llmprof's topics created when missing: N for the input"
            + " and output topics, or FAMILY=N[,FAMILY=N...] with families inputs, outputs, dead-letters, baselines"
            + " (default: inputs=3,outputs=3,dead-letters=1,baselines=1; the same in every component, so whichever"
            + " starts first creates the same layout). Existing topics keep their count (a WARN says when it differs).";
    /** The help text of {@code --replication-factor}. */
    public static final String REPLICATION_FACTOR_HELP =
            "Replication factor of llmprof's topics created when missing, and of the streams app's internal topics"
                    + " (default: 3, or the broker count when the cluster has fewer).";
    /** The help text of {@code --min-insync-replicas}. */
    public static final String MIN_INSYNC_HELP = "min.insync.replicas of llmprof's topics created when missing"
            + " (default: 2 when the replication factor is 3 or more, else the broker's default).";

    public TopicLayout {
        checkPartitions("inputs", inputPartitions);
        checkPartitions("outputs", outputPartitions);
        checkPartitions("dead-letters", deadLetterPartitions);
        checkPartitions("baselines", baselinePartitions);
        if (replicationFactor != null && replicationFactor < 1) {
            throw new IllegalArgumentException("replication factor must be at least 1, got " + replicationFactor);
        }
        if (minInsyncReplicas != null && minInsyncReplicas < 1) {
            throw new IllegalArgumentException("min.insync.replicas must be at least 1, got " + minInsyncReplicas);
        }
        if (replicationFactor != null && minInsyncReplicas != null && minInsyncReplicas > replicationFactor) {
            // Every acks=all write would then fail with NotEnoughReplicas: refuse it before any topic exists.
            throw new IllegalArgumentException("min.insync.replicas " + minInsyncReplicas
                    + " is above the replication factor " + replicationFactor + ": no write could succeed");
        }
    }

    /** inputs=3, outputs=3, dead-letters=1, baselines=1; replication and min.insync from the cluster's size. */
    public static TopicLayout defaults() {
        return new TopicLayout(DEFAULT_PARTITIONS, DEFAULT_PARTITIONS, 1, 1, null, null);
    }

    /**
     * The defaults with the command-line options applied; each may be null (not given).
     *
     * @param partitions {@code N} (inputs and outputs) or {@code family=N[,family=N...]}
     */
    public static TopicLayout fromOptions(String partitions, Short replicationFactor, Short minInsyncReplicas) {
        TopicLayout layout = defaults();
        if (partitions != null) {
            layout = layout.withPartitions(partitions);
        }
        return new TopicLayout(
                layout.inputPartitions,
                layout.outputPartitions,
                layout.deadLetterPartitions,
                layout.baselinePartitions,
                replicationFactor,
                minInsyncReplicas);
    }

    /** Inputs and outputs with {@code n} partitions each. */
    public TopicLayout withPartitions(int n) {
        return new TopicLayout(n, n, deadLetterPartitions, baselinePartitions, replicationFactor, minInsyncReplicas);
    }

    /** {@code N} (inputs and outputs) or {@code family=N[,family=N...]}, the {@code --partitions} syntax. */
    public TopicLayout withPartitions(String spec) {
        Objects.requireNonNull(spec, "spec");
        String s = spec.trim();
        if (s.matches("\\d+")) {
            return withPartitions(parseCount("--partitions", s));
        }
        Map<Topics.Family, Integer> counts = new EnumMap<>(Topics.Family.class);
        counts.put(Topics.Family.INPUTS, inputPartitions);
        counts.put(Topics.Family.OUTPUTS, outputPartitions);
        counts.put(Topics.Family.DEAD_LETTERS, deadLetterPartitions);
        counts.put(Topics.Family.BASELINES, baselinePartitions);
        for (String part : s.split(",")) {
            int eq = part.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException(
                        "--partitions " + spec + ": expected N or FAMILY=N[,FAMILY=N...], got '" + part + "'");
            }
            String name = part.substring(0, eq).trim();
            Topics.Family family = Topics.Family.byOptionName(name)
                    .orElseThrow(() -> new IllegalArgumentException("--partitions " + spec + ": unknown topic family '"
                            + name + "' (known: inputs, outputs, dead-letters, baselines)"));
            counts.put(
                    family,
                    parseCount("--partitions " + name, part.substring(eq + 1).trim()));
        }
        return new TopicLayout(
                counts.get(Topics.Family.INPUTS),
                counts.get(Topics.Family.OUTPUTS),
                counts.get(Topics.Family.DEAD_LETTERS),
                counts.get(Topics.Family.BASELINES),
                replicationFactor,
                minInsyncReplicas);
    }

    public TopicLayout withReplicationFactor(Short rf) {
        return new TopicLayout(
                inputPartitions, outputPartitions, deadLetterPartitions, baselinePartitions, rf, minInsyncReplicas);
    }

    public TopicLayout withMinInsyncReplicas(Short minIsr) {
        return new TopicLayout(
                inputPartitions, outputPartitions, deadLetterPartitions, baselinePartitions, replicationFactor, minIsr);
    }

    /** Partitions of a topic of that family. */
    public int partitions(Topics.Family family) {
        return switch (family) {
            case INPUTS -> inputPartitions;
            case OUTPUTS -> outputPartitions;
            case DEAD_LETTERS -> deadLetterPartitions;
            case BASELINES -> baselinePartitions;
        };
    }

    /** The replication factor on a cluster of {@code brokers} brokers: the set one, or min(3, brokers). */
    public short effectiveReplicationFactor(int brokers) {
        if (replicationFactor != null) {
            return replicationFactor;
        }
        return (short) Math.max(1, Math.min(DEFAULT_MAX_REPLICATION_FACTOR, brokers));
    }

    /**
     * The {@code min.insync.replicas} to set on created topics of replication factor {@code rf}, or null to leave
     * the broker's default: with 3 replicas, 2 must have a write before it is acknowledged, so one broker can be lost
     * with nothing lost and writes still accepted.
     */
    public Short effectiveMinInsyncReplicas(short rf) {
        if (minInsyncReplicas != null) {
            return minInsyncReplicas;
        }
        return rf >= 3 ? (short) 2 : null;
    }

    /** As the {@code --partitions} option writes it. */
    public String partitionsSpec() {
        return "inputs=" + inputPartitions + ",outputs=" + outputPartitions + ",dead-letters=" + deadLetterPartitions
                + ",baselines=" + baselinePartitions;
    }

    private static void checkPartitions(String family, int n) {
        if (n < 1) {
            throw new IllegalArgumentException("partitions of " + family + " must be at least 1, got " + n);
        }
    }

    private static int parseCount(String what, String value) {
        try {
            int n = Integer.parseInt(value.toLowerCase(Locale.ROOT));
            if (n < 1) {
                throw new IllegalArgumentException(what + " must be at least 1, got " + n);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(what + ": not a partition count: '" + value + "'");
        }
    }
}
