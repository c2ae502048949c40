package io.llmprof.dashboard.store;

import io.llmprof.events.LayerRecord;
import io.llmprof.events.PassRecord;
import java.util.List;
import java.util.Objects;

/**
 * A pass with the layers received so far, ordered by layer number. Fewer than {@code
 * pass.layerCount()} layers means the rest are still on their way.
 */
public record StoredPass(PassRecord pass, List<LayerRecord> layers) {
    public StoredPass {
        Objects.requireNonNull(pass, "pass");
        layers = List.copyOf(layers);
    }
}
