package io.llmprof.deploy.logging;

import java.util.List;
import java.util.Objects;

/**
 * Log lines that Kafka writes at ERROR or WARN for conditions it retries by itself and that lose nothing. Each rule
 * is narrow (logger, exception class and a fragment of its message), so the same logger's real errors still show.
 *
 * @param rules the rules, checked in order
 */
record RetriedConditions(List<Rule> rules) {
    /**
     * The broker's rejection of a transactional producer's batch whose sequence is not 0 while the partition has no
     * state for that producer yet (KIP-890 transactions v2, KAFKA-18202, apache/kafka#19902), and the out-of-order
     * rejections of the same producer's later batches in flight: the producer re-sends and the transaction commits;
     * docs/runbook.md "Log lines that are not alerts".
     */
    static final RetriedConditions DEFAULT = new RetriedConditions(List.of(
            new Rule(
                    "kafka.server.ReplicaManager",
                    "org.apache.kafka.common.errors.OutOfOrderSequenceException",
                    "for transactions v2 idempotent producer with no existing state"),
            /*
             * What follows that rejection while the producer has more batches in flight to the partition: each later
             * batch arrives with a gap before it ("Out of order sequence number for producer 2 at offset 5 in
             * partition ...: 4 (incoming seq. number), 1 (current end sequence number)"). Kafka's producer retries a
             * batch that is not the next one after its last acknowledged (TransactionManager.canRetry) once the
             * earlier batches land; a gap it cannot close aborts the transaction, which Kafka Streams reports itself.
             * Seen in `bench live`'s service part on the embedded broker.
             */
            new Rule(
                    "kafka.server.ReplicaManager",
                    "org.apache.kafka.common.errors.OutOfOrderSequenceException",
                    "(current end sequence number)"),
            /*
             * A streams instance restarted on its state directory after a crash under exactly-once (no checkpoint
             * file): Kafka Streams wipes the tasks' local stores and restores them from their changelogs, and says so
             * first at WARN ("did not find checkpoint offsets ... wipe out the local state"), then at ERROR with the
             * exceptions in the message, no throwable. The recovery is correct (StreamsKillIT): issue 18.
             */
            new Rule(
                    "org.apache.kafka.streams.processor.internals.TaskManager",
                    "org.apache.kafka.streams.errors.TaskCorruptedException",
                    "are corrupted and hence need to be re-initialized")));

    /** Causes looked at, so an endless cause chain cannot hang a logging call. */
    static final int MAX_DEPTH = 16;

    RetriedConditions {
        rules = List.copyOf(rules);
    }

    /**
     * One retried condition.
     *
     * @param logger the logger's name (exact, or a prefix ending in {@code .})
     * @param exception the class name of the exception, anywhere in the cause chain
     * @param messageFragment text its message contains
     */
    record Rule(String logger, String exception, String messageFragment) {
        Rule {
            Objects.requireNonNull(logger, "logger");
            Objects.requireNonNull(exception, "exception");
            Objects.requireNonNull(messageFragment, "messageFragment");
        }

        boolean appliesTo(String loggerName) {
            return logger.endsWith(".") ? loggerName.startsWith(logger) : loggerName.equals(logger);
        }

        /** The exception in a message logged without a throwable ({@code "... {task=Exception: message}"}). */
        boolean matchesMessage(String message) {
            return message != null && message.contains(exception) && message.contains(messageFragment);
        }

        boolean matches(Throwable t) {
            int depth = 0;
            for (Throwable c = t; c != null && depth++ < MAX_DEPTH; c = c.getCause() == c ? null : c.getCause()) {
                if (c.getClass().getName().equals(exception)
                        && c.getMessage() != null
                        && c.getMessage().contains(messageFragment)) {
                    return true;
                }
            }
            return false;
        }
    }

    /** The rules for one logger (empty for most). */
    RetriedConditions forLogger(String name) {
        return new RetriedConditions(
                rules.stream().filter(r -> r.appliesTo(name)).toList());
    }

    boolean matches(Throwable t) {
        if (t == null) {
            return false;
        }
        for (Rule r : rules) {
            if (r.matches(t)) {
                return true;
            }
        }
        return false;
    }

    /** A rule's exception in a line logged with or without a throwable. */
    boolean matches(Throwable t, String message) {
        if (t != null) {
            return matches(t);
        }
        for (Rule r : rules) {
            if (r.matchesMessage(message)) {
                return true;
            }
        }
        return false;
    }
}
