package io.llmprof.streams.boundary;

import io.llmprof.events.Anomaly;
import java.util.List;

/** What one step of the state machine produced. */
public record Emitted(List<ClosedPass> passes, List<Anomaly> anomalies) {
    public static final Emitted NONE = new Emitted(List.of(), List.of());

    public Emitted {
        passes = List.copyOf(passes);
        anomalies = List.copyOf(anomalies);
    }

    public boolean isEmpty() {
        return passes.isEmpty() && anomalies.isEmpty();
    }
}
