package io.llmprof.streams.offline;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.llmprof.streams.profile.LayerTyping;
import io.llmprof.streams.profile.ModelConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The architecture facts of a config.json that explain a layer's kernels (the seed's "Model Architecture Summary"),
 * in a fixed order, each only when the config has it (names differ between model families: DeepSeek {@code
 * n_routed_experts}, Qwen {@code num_experts}, Mixtral {@code num_local_experts}). Derived facts say so: head_dim
 * missing is hidden_size / heads; the model name comes from the config, else from its file or directory name; the
 * attention type from {@code attention_type}, else from the keys that imply one; the layer and compress-ratio
 * distributions from {@link LayerTyping}, as `analyze layers` types the layers.
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
            List.of("o_lora_rank", "o_lora_rank"),
            List.of("o_groups", "o_groups"),
            List.of("qk_nope_head_dim", "qk_nope_head_dim"),
            List.of("qk_rope_head_dim", "qk_rope_head_dim"),
            List.of("v_head_dim", "v_head_dim"),
            List.of("hc_mult", "hc_mult"),
            List.of("hc_sinkhorn_iters", "hc_sinkhorn_iters"),
            List.of("index_n_heads", "index_n_heads"),
            List.of("index_head_dim", "index_head_dim"),
            List.of("index_topk", "index_topk"),
            List.of("num_hash_layers", "num_hash_layers"),
            List.of("num_nextn_predict_layers", "num_nextn_predict_layers"),
            List.of("compress_ratios", "compress_ratios"),
            List.of("sliding_window", "sliding_window"),
            List.of("expert_dtype", "expert_dtype"),
            List.of("vocab_size", "vocab_size"),
            List.of("max_position_embeddings", "max_position_embeddings"),
            List.of("dtype", "torch_dtype", "dtype"));

    /** Keys a config may name its model by (Hugging Face writes {@code _name_or_path}). */
    private static final List<String> NAME_KEYS = List.of("_name_or_path", "name_or_path", "model_name", "name");

    /** aiconfigurator's copies: {@code <org>--<model>_config.json}; the HF cache: {@code models--<org>--<model>}. */
    private static final Pattern FLAT_FILE = Pattern.compile("^(.+?)--(.+?)_config\\.json$");

    private static final Pattern HF_CACHE = Pattern.compile("^models--(.+?)--(.+)$");

    private ModelSummary() {}

    /** Label -> JSON value (never null values); empty without a config. */
    static Map<String, JsonNode> of(Path config) {
        return of(config, null);
    }

    /**
     * @param numLayers {@code --num-layers} (wins over num_hidden_layers for the layer distribution), or null
     */
    static Map<String, JsonNode> of(Path config, Integer numLayers) {
        Map<String, JsonNode> out = new LinkedHashMap<>();
        if (config == null) {
            return out;
        }
        ModelConfig model = ModelConfig.read(config);
        JsonNode json = model.json();
        String[] name = modelName(json, config);
        out.put("model_name", TextNode.valueOf(name[0]));
        out.put("model_name_source", TextNode.valueOf(name[1]));
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
                    IntNode.valueOf(json.path("hidden_size").asInt()
                            / json.path("num_attention_heads").asInt()));
        }
        String[] attention = attentionType(json, model);
        out.put("attention_type", TextNode.valueOf(attention[0]));
        out.put("attention_type_source", TextNode.valueOf(attention[1]));
        Integer n = numLayers != null ? numLayers : model.numHiddenLayers();
        if (n != null && n > 0) {
            LayerTyping.Typing typing = LayerTyping.of(model, n);
            ObjectNode types = JsonNodeFactory.instance.objectNode();
            Map<String, Integer> counts = new LinkedHashMap<>();
            typing.types().forEach(t -> counts.merge(t, 1, Integer::sum));
            counts.forEach(types::put);
            out.put("layer_types", types);
            if (!typing.compressRatios().isEmpty()) {
                ObjectNode ratios = JsonNodeFactory.instance.objectNode();
                Map<Integer, Integer> rc = new TreeMap<>();
                typing.compressRatios().forEach(r -> rc.merge(r, 1, Integer::sum));
                rc.forEach((r, c) -> ratios.put(r.toString(), c));
                out.put("compress_ratio_distribution", ratios);
            }
            if (!typing.notices().isEmpty()) {
                out.put("layer_types_notice", TextNode.valueOf(String.join("; ", typing.notices())));
            }
        }
        return out;
    }

    /** {name, where it came from}. */
    static String[] modelName(JsonNode json, Path config) {
        for (String key : NAME_KEYS) {
            JsonNode v = json.get(key);
            if (v != null && v.isTextual() && !v.asText().isBlank()) {
                return new String[] {v.asText(), "config " + key};
            }
        }
        Path file = config.toAbsolutePath().normalize();
        String fileName = file.getFileName().toString();
        Matcher flat = FLAT_FILE.matcher(fileName);
        if (flat.matches()) {
            return new String[] {flat.group(1) + "/" + flat.group(2), "the config's file name"};
        }
        for (Path dir = file.getParent(); dir != null && dir.getFileName() != null; dir = dir.getParent()) {
            Matcher cache = HF_CACHE.matcher(dir.getFileName().toString());
            if (cache.matches()) {
                return new String[] {cache.group(1) + "/" + cache.group(2), "the Hugging Face cache directory"};
            }
        }
        Path parent = file.getParent();
        if (parent != null && parent.getFileName() != null) {
            return new String[] {parent.getFileName().toString(), "the config's directory name (the config names none)"
            };
        }
        return new String[] {fileName, "the config's file name (the config names none)"};
    }

    /**
     * {type, where it came from}: {@code attention_type} when the config says it, else derived: compress_ratios
     * with an indexer (DeepSeek-V4's compressed sparse + heavily compressed attention) {@code csa_hca}; a
     * kv_lora_rank {@code mla}, with index_topk (DeepSeek-V3.2's sparse attention) {@code mla_dsa}; otherwise the
     * head counts: {@code mha}, {@code gqa}, {@code mqa}; {@code unknown} when none of these keys is there.
     */
    static String[] attentionType(JsonNode json, ModelConfig model) {
        JsonNode declared = json.get("attention_type");
        if (declared != null && declared.isTextual()) {
            return new String[] {declared.asText(), "config attention_type"};
        }
        boolean indexer = json.path("index_n_heads").asInt(0) > 0
                || json.path("index_topk").asInt(0) > 0;
        if (!model.compressRatios().isEmpty()) {
            return indexer
                    ? new String[] {"csa_hca", "derived: compress_ratios with an indexer (index_n_heads, index_topk)"}
                    : new String[] {"compressed", "derived: compress_ratios without an indexer"};
        }
        if (json.path("kv_lora_rank").asInt(0) > 0) {
            return indexer
                    ? new String[] {"mla_dsa", "derived: kv_lora_rank with index_topk (sparse MLA)"}
                    : new String[] {"mla", "derived: kv_lora_rank > 0"};
        }
        int heads = json.path("num_attention_heads").asInt(0);
        int kv = json.path("num_key_value_heads").asInt(heads);
        if (heads <= 0) {
            return new String[] {"unknown", "the config has no attention_type, kv_lora_rank or head counts"};
        }
        String how = "derived: " + heads + " heads, " + kv + " KV heads";
        if (kv == heads) {
            return new String[] {"mha", how};
        }
        return new String[] {kv == 1 ? "mqa" : "gqa", how};
    }

    /** The seed's "Model Architecture Summary" block, from {@link #of}; "?" where the config has no value. */
    static void render(PrintWriter out, Map<String, JsonNode> m) {
        if (m.isEmpty()) {
            out.println("Model Architecture Summary: no --config given");
            return;
        }
        out.println("Model Architecture Summary (config.json)");
        out.printf(Locale.ROOT, "  Model: %s (name from %s)%n", text(m, "model_name"), text(m, "model_name_source"));
        out.printf(
                Locale.ROOT,
                "  Type: %s, %s; Layers: %s%n",
                text(m, "model_type"),
                text(m, "architecture"),
                text(m, "layers"));
        out.printf(
                Locale.ROOT,
                "  Hidden: %s, Heads: %s (KV: %s), Head dim: %s%n",
                text(m, "hidden_size"),
                text(m, "attention_heads"),
                text(m, "kv_heads"),
                m.containsKey("head_dim") ? text(m, "head_dim") : text(m, "head_dim (derived)") + " (derived)");
        StringBuilder attention = new StringBuilder("  Attention: ")
                .append(text(m, "attention_type"))
                .append(" (")
                .append(text(m, "attention_type_source"))
                .append(")");
        appendIf(attention, m, "q_lora_rank", "Q LoRA");
        appendIf(attention, m, "kv_lora_rank", "KV LoRA");
        appendIf(attention, m, "o_lora_rank", "O LoRA");
        appendIf(attention, m, "o_groups", "O groups");
        out.println(attention);
        if (m.containsKey("experts")) {
            out.printf(
                    Locale.ROOT,
                    "  MoE: %s experts, top-%s, %s shared (moe_intermediate_size=%s)%s%n",
                    text(m, "experts"),
                    text(m, "experts_per_token"),
                    m.containsKey("shared_experts") ? text(m, "shared_experts") : "0",
                    text(m, "moe_intermediate_size"),
                    m.containsKey("first_k_dense_replace")
                            ? ", first_k_dense_replace=" + text(m, "first_k_dense_replace")
                            : "");
        }
        if (m.containsKey("intermediate_size")) {
            out.printf(Locale.ROOT, "  FFN: intermediate_size=%s%n", text(m, "intermediate_size"));
        }
        if (m.containsKey("hc_mult") || m.containsKey("hc_sinkhorn_iters")) {
            out.printf(
                    Locale.ROOT,
                    "  MHC: hc_mult=%s, hc_sinkhorn_iters=%s%n",
                    text(m, "hc_mult"),
                    text(m, "hc_sinkhorn_iters"));
        }
        if (m.containsKey("index_n_heads") || m.containsKey("index_topk")) {
            out.printf(
                    Locale.ROOT,
                    "  Indexer: %s heads x %s dim, topk=%s%n",
                    text(m, "index_n_heads"),
                    text(m, "index_head_dim"),
                    text(m, "index_topk"));
            out.printf(
                    Locale.ROOT,
                    "  RoPE/window: qk_rope_head_dim=%s, sliding_window=%s%n",
                    text(m, "qk_rope_head_dim"),
                    text(m, "sliding_window"));
        }
        if (m.containsKey("layer_types")) {
            out.println("  Layer distribution: " + distribution(m.get("layer_types"), ""));
        }
        if (m.containsKey("compress_ratio_distribution")) {
            out.println("  compress_ratios: " + distribution(m.get("compress_ratio_distribution"), "c_r=")
                    + (m.containsKey("num_hash_layers") ? "; num_hash_layers=" + text(m, "num_hash_layers") : ""));
        }
        if (m.containsKey("layer_types_notice")) {
            out.println("  notice: " + text(m, "layer_types_notice"));
        }
    }

    private static String distribution(JsonNode counts, String prefix) {
        StringBuilder sb = new StringBuilder();
        counts.fields().forEachRemaining(e -> {
            if (sb.length() > 0) {
                sb.append(", ");
            }
            sb.append(prefix)
                    .append(e.getKey())
                    .append(": ")
                    .append(e.getValue().asInt());
        });
        return sb.toString();
    }

    private static void appendIf(StringBuilder sb, Map<String, JsonNode> m, String key, String label) {
        if (m.containsKey(key)) {
            sb.append(", ").append(label).append(": ").append(text(m, key));
        }
    }

    private static String text(Map<String, JsonNode> m, String key) {
        JsonNode v = m.get(key);
        return v == null ? "?" : v.isTextual() ? v.asText() : v.toString();
    }
}
