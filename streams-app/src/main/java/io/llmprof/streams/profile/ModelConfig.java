package io.llmprof.streams.profile;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The parts of a Hugging Face config.json the analysis uses. Multimodal configs that nest the language
 * model under {@code text_config} are read from there.
 */
public record ModelConfig(JsonNode json) {

    public static ModelConfig read(Path file) {
        try {
            JsonNode root = Json.mapper().readTree(file.toFile());
            if (root == null || !root.isObject()) {
                throw new IllegalArgumentException("model config " + file + " is not a JSON object");
            }
            if (!root.has("num_hidden_layers") && root.path("text_config").isObject()) {
                root = root.get("text_config");
            }
            return new ModelConfig(root);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read model config " + file + ": " + e.getMessage(), e);
        }
    }

    public Integer numHiddenLayers() {
        return intOrNull("num_hidden_layers");
    }

    public int numHashLayers() {
        return intOr("num_hash_layers", 0);
    }

    public Integer firstKDenseReplace() {
        return intOrNull("first_k_dense_replace");
    }

    public Integer moeLayerFreq() {
        return intOrNull("moe_layer_freq");
    }

    /** Qwen-MoE style: every decoder_sparse_step-th layer is MoE unless listed in mlp_only_layers. */
    public Integer decoderSparseStep() {
        return intOrNull("decoder_sparse_step");
    }

    public List<Integer> mlpOnlyLayers() {
        return intList("mlp_only_layers");
    }

    public boolean hasExperts() {
        return intOr("num_experts", 0) > 0 || intOr("n_routed_experts", 0) > 0;
    }

    /** compress_ratios (DeepSeek-V4), empty when absent. */
    public List<Integer> compressRatios() {
        return intList("compress_ratios");
    }

    private Integer intOrNull(String key) {
        JsonNode v = json.get(key);
        return v != null && v.isNumber() ? v.asInt() : null;
    }

    private int intOr(String key, int dflt) {
        Integer v = intOrNull(key);
        return v == null ? dflt : v;
    }

    private List<Integer> intList(String key) {
        JsonNode v = json.get(key);
        List<Integer> out = new ArrayList<>();
        if (v != null && v.isArray()) {
            v.forEach(e -> out.add(e.asInt()));
        }
        return out;
    }
}
