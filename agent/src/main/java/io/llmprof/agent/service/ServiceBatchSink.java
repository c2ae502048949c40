package io.llmprof.agent.service;

import io.llmprof.agent.kineto.InputProblem;
import io.llmprof.events.service.ServiceEvent;
import java.util.List;

/** Where service events of one instance go: {@link ServiceShipper} (Kafka), or a test's list. */
@FunctionalInterface
public interface ServiceBatchSink {
    /**
     * Ships {@code events} of {@code (job, instance)} from {@code source} and returns once they are acknowledged.
     *
     * @throws io.llmprof.agent.produce.DeliveryException when Kafka did not acknowledge them
     */
    void ship(String job, String instance, String source, List<ServiceEvent> events, boolean endOfStream);

    /** Bad input of {@code (job, instance)}: counted, reported as an anomaly and dead-lettered. Default: ignored. */
    default void rejected(String job, String instance, InputProblem problem) {}

    /**
     * A body (or chunk) with {@code lines} bad lines summarized in one problem: counted {@code lines} times, one
     * dead letter; an anomaly only when {@code anomaly} (the caller rate-limits them per source and kind).
     * Default: {@link #rejected(String, String, InputProblem)} once.
     */
    default void rejectedLines(String job, String instance, InputProblem summary, long lines, boolean anomaly) {
        rejected(job, instance, summary);
    }
}
