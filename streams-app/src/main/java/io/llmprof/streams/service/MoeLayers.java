package io.llmprof.streams.service;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * The number of MoE layers (decoder layers with routed experts) of a model, from its Hugging Face
 * {@code config.json}; EP balance numbers GroupedMatmul calls modulo this count (never a constant 58).
 *
 * <ul>
 *   <li>DeepSeek-V2/V3/V3.2, Kimi-K2 ({@code n_routed_experts > 0}, {@code first_k_dense_replace}): layer i has
 *       experts when {@code i >= first_k_dense_replace} and {@code i % moe_layer_freq == 0} (moe_layer_freq
 *       default 1), as the reference modeling code decides. DeepSeek-V3: 61 - 3 = 58; Kimi-K2: 61 - 1 = 60.
 *   <li>DeepSeek-V4 ({@code n_routed_experts > 0}, no {@code first_k_dense_replace}): every layer is MoE; the
 *       first {@code num_hash_layers} route by token hash instead of a learned gate but still run their experts'
 *       grouped matmuls, so they count. V4-Flash 43, V4-Pro 61.
 *   <li>Qwen2/Qwen3-MoE ({@code num_experts > 0}, {@code decoder_sparse_step}): layer i is MoE when it is not in
 *       {@code mlp_only_layers} and {@code (i + 1) % decoder_sparse_step == 0}. Qwen3-30B-A3B 48, 235B-A22B 94.
 *   <li>Mixtral and others with {@code num_local_experts > 0} (or only {@code num_experts} /
 *       {@code n_routed_experts}): every layer.
 *   <li>Dense models (Llama, Qwen3-8B): 0.
 * </ul>
 *
 * The multi-token-prediction layers ({@code num_nextn_predict_layers}) are not counted: they are not among
 * {@code num_hidden_layers} and run only with speculative decoding. A config nesting the language model under
 * {@code text_config} (multimodal models) is read there.
 */
public final class MoeLayers {
    private MoeLayers() {}

    /** MoE layers of the model whose config.json is {@code configJson}; unreadable files throw with the path. */
    public static int fromConfig(Path configJson) {
        JsonNode root;
        try {
            root = Json.mapper().readTree(configJson.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read model config " + configJson + ": " + e.getMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("model config " + configJson + " is not a JSON object");
        }
        return fromConfig(root);
    }

    /** MoE layers of a parsed config.json object (0 for a dense model or when the layer count is missing). */
    public static int fromConfig(JsonNode config) {
        JsonNode c = config;
        if (!c.has("num_hidden_layers") && c.path("text_config").isObject()) {
            c = c.get("text_config");
        }
        int layers = c.path("num_hidden_layers").asInt(0);
        if (layers <= 0) {
            return 0;
        }
        int routed = c.path("n_routed_experts").asInt(0);
        int experts = c.path("num_experts").asInt(0);
        int local = c.path("num_local_experts").asInt(0);
        if (routed > 0) {
            int firstDense = Math.max(0, c.path("first_k_dense_replace").asInt(0));
            int freq = Math.max(1, c.path("moe_layer_freq").asInt(1));
            int count = 0;
            for (int i = firstDense; i < layers; i++) {
                if (i % freq == 0) {
                    count++;
                }
            }
            return count;
        }
        if (experts > 0 && (c.has("decoder_sparse_step") || c.has("mlp_only_layers"))) {
            int step = Math.max(1, c.path("decoder_sparse_step").asInt(1));
            java.util.Set<Integer> mlpOnly = new java.util.HashSet<>();
            for (JsonNode n : c.path("mlp_only_layers")) {
                mlpOnly.add(n.asInt());
            }
            int count = 0;
            for (int i = 0; i < layers; i++) {
                if (!mlpOnly.contains(i) && (i + 1) % step == 0) {
                    count++;
                }
            }
            return count;
        }
        if (local > 0 || experts > 0) {
            return layers;
        }
        return 0;
    }
}
