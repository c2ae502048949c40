package io.llmprof.agent.produce;

/** Kafka did not acknowledge some records sent since the last flush: nothing after them may be checkpointed. */
public class DeliveryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public DeliveryException(String message, Throwable cause) {
        super(message, cause);
    }
}
