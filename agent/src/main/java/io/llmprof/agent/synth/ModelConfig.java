package io.llmprof.agent.synth;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The fields of a Hugging Face config.json that shape a decode pass. Missing fields get llama-like defaults. */
record ModelConfig(
        String name,
        String modelType,
        int numHiddenLayers,
        int hiddenSize,
        int intermediateSize,
        int moeIntermediateSize,
        int numAttentionHeads,
        int numKeyValueHeads,
        int headDim,
        int kvLoraRank,
        int qLoraRank,
        int qkRopeHeadDim,
        int qkNopeHeadDim,
        int vHeadDim,
        int routedExperts,
        int expertsPerTok,
        int sharedExperts,
        int firstKDenseReplace,
        int moeLayerFreq,
        int decoderSparseStep,
        Set<Integer> mlpOnlyLayers,
        int vocabSize,
        int numHashLayers,
        List<Integer> compressRatios,
        int indexTopk,
        int indexNHeads,
        int indexHeadDim,
        int hcMult,
        int oGroups,
        int slidingWindow,
        boolean fp8Weights,
        boolean qkNorm) {

    ModelConfig {
        mlpOnlyLayers = Set.copyOf(mlpOnlyLayers);
        compressRatios = List.copyOf(compressRatios);
        if (numHiddenLayers < 1 || hiddenSize < 1 || numAttentionHeads < 1) {
            throw new IllegalArgumentException(
                    "config needs num_hidden_layers, hidden_size and num_attention_heads >= 1");
        }
    }

    static ModelConfig read(Path path) {
        JsonNode root;
        try {
            root = Json.mapper().readTree(path.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read model config " + path + ": " + e.getMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("model config " + path + " is not a JSON object");
        }
        return of(root, nameOf(path));
    }

    static ModelConfig of(JsonNode c, String name) {
        int hidden = intOf(c, "hidden_size", 0);
        int heads = intOf(c, "num_attention_heads", 0);
        int headDim = intOf(c, "head_dim", heads > 0 ? hidden / heads : 128);
        int routed = intOf(c, "n_routed_experts", intOf(c, "num_experts", 0));
        int moeInter = intOf(c, "moe_intermediate_size", 0);
        int inter = intOf(c, "intermediate_size", moeInter > 0 ? moeInter * 4 : hidden * 4);
        String modelType = textOf(c, "model_type", "unknown");
        List<Integer> ratios = new ArrayList<>();
        JsonNode cr = c.path("compress_ratios");
        if (cr.isArray()) {
            cr.forEach(n -> ratios.add(n.asInt()));
        }
        List<Integer> mlpOnly = new ArrayList<>();
        c.path("mlp_only_layers").forEach(n -> mlpOnly.add(n.asInt()));
        JsonNode quant = c.path("quantization_config");
        boolean fp8 = "fp8".equalsIgnoreCase(quant.path("quant_method").asText(""));
        return new ModelConfig(
                name,
                modelType,
                intOf(c, "num_hidden_layers", 0),
                hidden,
                inter,
                moeInter > 0 ? moeInter : inter,
                heads,
                intOf(c, "num_key_value_heads", heads),
                headDim,
                intOf(c, "kv_lora_rank", 0),
                intOf(c, "q_lora_rank", 0),
                intOf(c, "qk_rope_head_dim", 64),
                intOf(c, "qk_nope_head_dim", 128),
                intOf(c, "v_head_dim", headDim),
                routed,
                intOf(c, "num_experts_per_tok", routed > 0 ? 8 : 0),
                intOf(c, "n_shared_experts", 0),
                intOf(c, "first_k_dense_replace", 0),
                Math.max(1, intOf(c, "moe_layer_freq", 1)),
                Math.max(1, intOf(c, "decoder_sparse_step", 1)),
                Set.copyOf(mlpOnly),
                intOf(c, "vocab_size", 32_000),
                intOf(c, "num_hash_layers", 0),
                ratios,
                intOf(c, "index_topk", 0),
                intOf(c, "index_n_heads", 64),
                intOf(c, "index_head_dim", 128),
                Math.max(1, intOf(c, "hc_mult", 1)),
                Math.max(1, intOf(c, "o_groups", 1)),
                intOf(c, "sliding_window", 128),
                fp8,
                modelType.startsWith("qwen3"));
    }

    /** Whether model layer {@code layer} has a routed-expert MLP (DeepSeek and Qwen-MoE conventions). */
    boolean isMoe(int layer) {
        if (routedExperts <= 0) {
            return false;
        }
        if (mlpOnlyLayers.contains(layer)) {
            return false;
        }
        if (layer < firstKDenseReplace) {
            return false;
        }
        return layer % moeLayerFreq == 0 && (layer + 1) % decoderSparseStep == 0;
    }

    /** compress_ratios entry of a layer; the list may be longer than the layer count (MTP layers). */
    int compressRatio(int layer) {
        return layer < compressRatios.size() ? compressRatios.get(layer) : 0;
    }

    private static String nameOf(Path path) {
        String file = path.getFileName().toString();
        String base = file.endsWith(".json") ? file.substring(0, file.length() - 5) : file;
        if (base.equals("config")) {
            Path parent = path.toAbsolutePath().getParent();
            return parent != null && parent.getFileName() != null
                    ? parent.getFileName().toString()
                    : base;
        }
        return base.endsWith("_config") ? base.substring(0, base.length() - 7) : base;
    }

    private static int intOf(JsonNode c, String field, int fallback) {
        JsonNode n = c.get(field);
        return n != null && n.isNumber() ? n.asInt() : fallback;
    }

    private static String textOf(JsonNode c, String field, String fallback) {
        JsonNode n = c.get(field);
        return n != null && n.isTextual() ? n.asText() : fallback;
    }
}
