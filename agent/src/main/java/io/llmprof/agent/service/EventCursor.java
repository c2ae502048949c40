package io.llmprof.agent.service;

import io.llmprof.events.service.ServiceEvent;
import java.io.IOException;

/** A pull source of service events in start-time order, for the k-way merge of {@link ServiceReaders}. */
interface EventCursor extends AutoCloseable {
    /** The next event, or null at the end. Bad rows are reported to the cursor's problem consumer and skipped. */
    ServiceEvent next() throws IOException;

    @Override
    void close() throws IOException;
}
