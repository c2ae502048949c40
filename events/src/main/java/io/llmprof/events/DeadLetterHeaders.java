package io.llmprof.events;

/**
 * Header names of dead-letter records. These are the names Kafka Streams (KIP-1034) writes on its own
 * dead-letter records; the agent writes the same ones for input it could not parse.
 */
public final class DeadLetterHeaders {
    private DeadLetterHeaders() {}

    public static final String EXCEPTION = "__streams.errors.exception";
    public static final String STACKTRACE = "__streams.errors.stacktrace";
    public static final String MESSAGE = "__streams.errors.message";
    public static final String TOPIC = "__streams.errors.topic";
    public static final String PARTITION = "__streams.errors.partition";
    public static final String OFFSET = "__streams.errors.offset";
    /**
     * llmprof's own: the topic a record the streams app produced was bound for when Kafka refused it (the
     * {@link #TOPIC} header names the input record being processed, as Kafka's own dead letters do).
     */
    public static final String DESTINATION = "llmprof.errors.destination";
    /** llmprof's own: file and byte position of bad agent input. */
    public static final String SOURCE = "llmprof.errors.source";
}
