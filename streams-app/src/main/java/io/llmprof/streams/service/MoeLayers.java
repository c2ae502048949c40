package io.llmprof.streams.service;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.IOException;
import java.nio.file.Path;

/**
 * Placeholder for helper h2's MoeLayers (same name and signature) so that {@code llmprof export --model-config}
 * compiles before the engine is merged; h2's version replaces this file on merge.
 */
public final class MoeLayers {
    private MoeLayers() {}

    /** MoE layer count of a HuggingFace config.json (0 for a dense model). */
    public static int fromConfig(Path config) throws IOException {
        JsonNode c = Json.mapper().readTree(config.toFile());
        int layers = c.path("num_hidden_layers").asInt(0);
        int experts = Math.max(
                c.path("n_routed_experts").asInt(0),
                Math.max(
                        c.path("num_local_experts").asInt(0),
                        c.path("num_experts").asInt(0)));
        if (experts <= 0) {
            return 0;
        }
        if (c.has("first_k_dense_replace")) {
            return Math.max(0, layers - c.path("first_k_dense_replace").asInt(0));
        }
        if (c.has("decoder_sparse_step") || c.has("mlp_only_layers")) {
            int step = Math.max(1, c.path("decoder_sparse_step").asInt(1));
            java.util.Set<Integer> dense = new java.util.HashSet<>();
            c.path("mlp_only_layers").forEach(n -> dense.add(n.asInt()));
            int moe = 0;
            for (int i = 0; i < layers; i++) {
                if (!dense.contains(i) && (i + 1) % step == 0) {
                    moe++;
                }
            }
            return moe;
        }
        return layers;
    }
}
