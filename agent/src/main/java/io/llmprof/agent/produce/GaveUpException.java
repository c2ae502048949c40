package io.llmprof.agent.produce;

/**
 * The agent stopped waiting for Kafka: the {@code --give-up-after} budget was spent without an acknowledgement, or
 * the agent was interrupted. Sticky: every later send or flush of the same {@link TraceProducer} throws it too, and
 * nothing is acknowledged after it (the producer is closed at once, so no batch sent before it reaches Kafka later).
 */
public final class GaveUpException extends DeliveryException {
    private static final long serialVersionUID = 1L;

    public GaveUpException(String message, Throwable cause) {
        super(message, cause);
    }
}
