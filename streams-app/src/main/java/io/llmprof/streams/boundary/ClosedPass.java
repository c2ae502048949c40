package io.llmprof.streams.boundary;

import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import java.util.List;

/**
 * A pass the state machine closed, with its layers.
 *
 * @param spans one per layer (same order) saying which GPU events of the rank it holds; empty when unknown
 */
public record ClosedPass(PassRecord pass, List<LayerRecord> layers, List<LayerSpan> spans) {
    public ClosedPass {
        layers = List.copyOf(layers);
        spans = spans == null ? List.of() : List.copyOf(spans);
    }

    public ClosedPass(PassRecord pass, List<LayerRecord> layers) {
        this(pass, layers, List.of());
    }
}
