package io.llmprof.streams.offline;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.streams.profile.ModelConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The architecture facts of a config.json that explain a layer's kernels, in a fixed order, each only when the
 * config has it (names differ between model families: DeepSeek {@code n_routed_experts}, Qwen {@code num_experts},
 * Mixtral {@code num_local_experts}). head_dim missing is derived as hidden_size / heads and marked so.
 */
final class ModelSummary {
    /** (label, config keys tried in order). */
    private static final List<List<String>> FIELDS = List.of(
            List.of("model_type", "model_type"),
            List.of("architecture", "architectures"),
            List.of("layers", "num_hidden_layers"),
            List.of("hidden_size", "hidden_size"),
            List.of("attention_heads", "num_attention_heads"),
            List.of("kv_heads", "num_key_value_heads"),
            List.of("head_dim", "head_dim"),
            List.of("intermediate_size", "intermediate_size"),
            List.of("moe_intermediate_size", "moe_intermediate_size"),
            List.of("experts", "n_routed_experts", "num_experts", "num_local_experts"),
            List.of("experts_per_token", "num_experts_per_tok", "moe_top_k"),
            List.of("shared_experts", "n_shared_experts", "num_shared_experts"),
            List.of("shared_expert_intermediate_size", "shared_expert_intermediate_size"),
            List.of("first_k_dense_replace", "first_k_dense_replace"),
            List.of("moe_layer_freq", "moe_layer_freq"),
            List.of("decoder_sparse_step", "decoder_sparse_step"),
            List.of("q_lora_rank", "q_lora_rank"),
            List.of("kv_lora_rank", "kv_lora_rank"),
            List.of("qk_nope_head_dim", "qk_nope_head_dim"),
            List.of("qk_rope_head_dim", "qk_rope_head_dim"),
            List.of("v_head_dim", "v_head_dim"),
            List.of("index_topk", "index_topk"),
            List.of("num_hash_layers", "num_hash_layers"),
            List.of("compress_ratios", "compress_ratios"),
            List.of("sliding_window", "sliding_window"),
            List.of("vocab_size", "vocab_size"),
            List.of("max_position_embeddings", "max_position_embeddings"),
            List.of("dtype", "torch_dtype", "dtype"));

    private ModelSummary() {}

    /** Label -> JSON value (never null values); empty without a config. */
    static Map<String, JsonNode> of(Path config) {
        Map<String, JsonNode> out = new LinkedHashMap<>();
        if (config == null) {
            return out;
        }
        JsonNode json = ModelConfig.read(config).json();
        for (List<String> f : FIELDS) {
            for (String key : f.subList(1, f.size())) {
                JsonNode v = json.get(key);
                if (v != null && !v.isNull()) {
                    out.put(f.get(0), v.isArray() && key.equals("architectures") && v.size() == 1 ? v.get(0) : v);
                    break;
                }
            }
        }
        if (!out.containsKey("head_dim")
                && json.path("hidden_size").canConvertToInt()
                && json.path("num_attention_heads").asInt() > 0) {
            out.put(
                    "head_dim (derived)",
                    com.fasterxml.jackson.databind.node.IntNode.valueOf(
                            json.path("hidden_size").asInt()
                                    / json.path("num_attention_heads").asInt()));
        }
        return out;
    }
}
