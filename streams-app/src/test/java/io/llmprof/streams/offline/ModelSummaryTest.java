package io.llmprof.streams.offline;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.streams.support.SharedData;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The compute flow's model summary. Expected values come from the config files themselves (python3: json.load, then
 * the layer types by ANALYSIS.md section 2 over compress_ratios[:num_hidden_layers]).
 */
class ModelSummaryTest {
    @TempDir
    Path tmp;

    @Test
    void deepSeekV4FlashHasItsNameAttentionMhcIndexerAndLayerDistribution() {
        Path config = SharedData.file("model-configs/deepseek-ai--DeepSeek-V4-Flash_config.json");
        Map<String, JsonNode> m = ModelSummary.of(config);
        assertThat(m.get("model_name").asText()).isEqualTo("deepseek-ai/DeepSeek-V4-Flash");
        assertThat(m.get("model_name_source").asText()).isEqualTo("the config's file name");
        assertThat(m.get("attention_type").asText()).isEqualTo("csa_hca");
        assertThat(m.get("o_lora_rank").asInt()).isEqualTo(1024);
        assertThat(m.get("hc_mult").asInt()).isEqualTo(4);
        assertThat(m.get("hc_sinkhorn_iters").asInt()).isEqualTo(20);
        assertThat(m.get("index_n_heads").asInt()).isEqualTo(64);
        assertThat(m.get("index_head_dim").asInt()).isEqualTo(128);
        // 43 layers; compress_ratios has 44 entries (the last, an MTP layer's 0, dropped): 0 x2, 4 x21, 128 x20.
        // Types: FIRST (0), HASH (1, 2: num_hash_layers 3), C128_HEAVY at odd 3..41 (20), C4_LIGHT at even 4..40
        // (19), FINAL (42).
        assertThat(m.get("layer_types").toString())
                .isEqualTo("{\"FIRST\":1,\"HASH\":2,\"C128_HEAVY\":20,\"C4_LIGHT\":19,\"FINAL\":1}");
        assertThat(m.get("compress_ratio_distribution").toString()).isEqualTo("{\"0\":2,\"4\":21,\"128\":20}");
        assertThat(m.get("layer_types_notice").asText()).contains("compress_ratios has 44 entries for 43 layers");

        StringWriter out = new StringWriter();
        ModelSummary.render(new PrintWriter(out, true), m);
        assertThat(out.toString())
                .contains("  Model: deepseek-ai/DeepSeek-V4-Flash (name from the config's file name)")
                .contains("  Attention: csa_hca (derived: compress_ratios with an indexer (index_n_heads, index_topk)),"
                        + " Q LoRA: 1024, O LoRA: 1024, O groups: 8")
                .contains("  MHC: hc_mult=4, hc_sinkhorn_iters=20")
                .contains("  Indexer: 64 heads x 128 dim, topk=512")
                .contains("  Layer distribution: FIRST: 1, HASH: 2, C128_HEAVY: 20, C4_LIGHT: 19, FINAL: 1")
                .contains("  compress_ratios: c_r=0: 2, c_r=4: 21, c_r=128: 20; num_hash_layers=3");
    }

    @Test
    void otherFamiliesGetTheirAttentionTypeAndNumLayersWins() {
        // DeepSeek-V3: kv_lora_rank 512; V3.2 adds index_topk 2048; Llama 3.1 8B: 32 heads, 8 KV heads
        assertThat(ModelSummary.of(SharedData.file("model-configs/deepseek-ai--DeepSeek-V3_config.json"))
                        .get("attention_type")
                        .asText())
                .isEqualTo("mla");
        assertThat(ModelSummary.of(SharedData.file("model-configs/deepseek-ai--DeepSeek-V3.2_config.json"))
                        .get("attention_type")
                        .asText())
                .isEqualTo("mla_dsa");
        Map<String, JsonNode> llama =
                ModelSummary.of(SharedData.file("model-configs/meta-llama--Meta-Llama-3.1-8B_config.json"), 4);
        assertThat(llama.get("attention_type").asText()).isEqualTo("gqa");
        assertThat(llama.get("layer_types").toString()).isEqualTo("{\"FIRST\":1,\"LAYER\":2,\"FINAL\":1}");
        assertThat(llama.containsKey("compress_ratio_distribution")).isFalse();
    }

    @Test
    void theNameComesFromTheConfigElseTheHuggingFaceCacheElseTheDirectory() throws Exception {
        Path named = tmp.resolve("a/config.json");
        Files.createDirectories(named.getParent());
        Files.writeString(named, "{\"_name_or_path\": \"org/Model-7B\", \"num_attention_heads\": 8}");
        assertThat(ModelSummary.of(named).get("model_name").asText()).isEqualTo("org/Model-7B");
        assertThat(ModelSummary.of(named).get("model_name_source").asText()).isEqualTo("config _name_or_path");
        assertThat(ModelSummary.of(named).get("attention_type").asText()).isEqualTo("mha");

        Path cached = tmp.resolve("hub/models--Qwen--Qwen3-8B/snapshots/abc123/config.json");
        Files.createDirectories(cached.getParent());
        Files.writeString(cached, "{}");
        assertThat(ModelSummary.of(cached).get("model_name").asText()).isEqualTo("Qwen/Qwen3-8B");
        assertThat(ModelSummary.of(cached).get("attention_type").asText()).isEqualTo("unknown");

        Path plain = tmp.resolve("Mixtral-8x7B/config.json");
        Files.createDirectories(plain.getParent());
        Files.writeString(plain, "{\"num_attention_heads\": 32, \"num_key_value_heads\": 1}");
        assertThat(ModelSummary.of(plain).get("model_name").asText()).isEqualTo("Mixtral-8x7B");
        assertThat(ModelSummary.of(plain).get("model_name_source").asText())
                .isEqualTo("the config's directory name (the config names none)");
        assertThat(ModelSummary.of(plain).get("attention_type").asText()).isEqualTo("mqa");
    }
}
