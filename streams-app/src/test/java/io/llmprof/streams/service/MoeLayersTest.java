package io.llmprof.streams.service;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.llmprof.events.Json;
import io.llmprof.streams.support.SharedData;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class MoeLayersTest {
    /**
     * Every config in ../shared/data/model-configs, checked by hand:
     *
     * <ul>
     *   <li>DeepSeek-V3 / V3.2: 61 layers, first_k_dense_replace 3, moe_layer_freq 1: 58 (the MTP layer of
     *       num_nextn_predict_layers is not among the 61).
     *   <li>Kimi-K2: 61 layers, first_k_dense_replace 1: 60.
     *   <li>DeepSeek-V4-Flash / Pro: n_routed_experts 256 / 384, no first_k_dense_replace: every layer (the 3 hash
     *       layers route by token hash but still run experts): 43 / 61.
     *   <li>Qwen3-30B-A3B / 235B-A22B: num_experts 128, decoder_sparse_step 1, mlp_only_layers []: 48 / 94.
     *   <li>Qwen3-8B, Llama-3.1-8B / 70B: dense: 0.
     * </ul>
     */
    @ParameterizedTest
    @CsvSource({
        "deepseek-ai--DeepSeek-V3_config.json, 58",
        "deepseek-ai--DeepSeek-V3.2_config.json, 58",
        "moonshotai--Kimi-K2-Instruct_config.json, 60",
        "deepseek-ai--DeepSeek-V4-Flash_config.json, 43",
        "deepseek-ai--DeepSeek-V4-Pro_config.json, 61",
        "Qwen--Qwen3-30B-A3B_config.json, 48",
        "Qwen--Qwen3-235B-A22B_config.json, 94",
        "Qwen--Qwen3-8B_config.json, 0",
        "meta-llama--Meta-Llama-3.1-8B_config.json, 0",
        "meta-llama--Meta-Llama-3.1-70B_config.json, 0",
    })
    void moe_layers_of_every_shared_model_config(String file, int expected) {
        assertThat(MoeLayers.fromConfig(SharedData.file("model-configs/" + file)))
                .isEqualTo(expected);
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                // moe_layer_freq 2 from layer 1: layers 2, 4, 6 of 0..7
                "{\"num_hidden_layers\": 8, \"n_routed_experts\": 8, \"first_k_dense_replace\": 1, \"moe_layer_freq\": 2}|3",
                // Qwen MoE with a sparse step of 2 and layer 3 MLP-only: (i+1) % 2 == 0 -> 1, 3, 5, 7; minus 3
                "{\"num_hidden_layers\": 8, \"num_experts\": 4, \"decoder_sparse_step\": 2, \"mlp_only_layers\": [3]}|3",
                // Mixtral
                "{\"num_hidden_layers\": 32, \"num_local_experts\": 8}|32",
                // multimodal: the language model under text_config
                "{\"text_config\": {\"num_hidden_layers\": 4, \"num_local_experts\": 2}}|4",
                "{\"n_routed_experts\": 8}|0",
                "{\"num_hidden_layers\": 12}|0",
            })
    void moe_layer_rules(String json, int expected) throws Exception {
        JsonNode config = Json.mapper().readTree(json);
        assertThat(MoeLayers.fromConfig(config)).isEqualTo(expected);
    }
}
