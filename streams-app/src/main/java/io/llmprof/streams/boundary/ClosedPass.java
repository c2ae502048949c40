package io.llmprof.streams.boundary;

import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import java.util.List;

/** A pass the state machine closed, with its layers. */
public record ClosedPass(PassRecord pass, List<LayerRecord> layers) {
    public ClosedPass {
        layers = List.copyOf(layers);
    }
}
