package io.llmprof.streams.profile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.support.SharedData;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ProfileResolutionTest {
    static Path config(String name) {
        return SharedData.file("model-configs/" + name);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "deepseek-ai--DeepSeek-V3_config.json, dsv3_mla, flash_fwd_mla_combine, 61, 1, opens",
        "deepseek-ai--DeepSeek-V3.2_config.json, dsv3_mla, flash_fwd_mla_combine, 61, 1, opens",
        "moonshotai--Kimi-K2-Instruct_config.json, dsv3_mla, flash_fwd_mla_combine, 61, 1, opens",
        "deepseek-ai--DeepSeek-V4-Flash_config.json, dsv4_csa_hca, mhc_post_tilelang, 43, 2, closes",
        "deepseek-ai--DeepSeek-V4-Pro_config.json, dsv4_csa_hca, mhc_post_tilelang, 61, 2, closes",
        "Qwen--Qwen3-8B_config.json, generic, , 36, 1, opens",
        "Qwen--Qwen3-30B-A3B_config.json, generic, , 48, 1, opens",
        "meta-llama--Meta-Llama-3.1-8B_config.json, generic, , 32, 1, opens",
    })
    void profileIsInferredFromConfigJson(
            String file, String profile, String anchor, int layers, int blocks, String role) {
        SegmenterConfig c = SegmenterConfig.resolve(config(file), null, null, null);
        assertThat(c.profileName()).isEqualTo(profile);
        assertThat(c.anchor()).isEqualTo(anchor);
        assertThat(c.numLayers()).isEqualTo(layers);
        assertThat(c.blocksPerLayer()).isEqualTo(blocks);
        assertThat(c.role().wire()).isEqualTo(role);
    }

    @Test
    void deepSeekV3LayersAreFirstDenseMoeFinal() {
        SegmenterConfig c = SegmenterConfig.resolve(config("deepseek-ai--DeepSeek-V3_config.json"), null, null, null);
        assertThat(c.layerTypes()).hasSize(61);
        assertThat(c.layerTypes().subList(0, 4)).containsExactly("FIRST", "DENSE", "DENSE", "MOE");
        assertThat(c.layerTypes().subList(3, 60)).containsOnly("MOE");
        assertThat(c.layerTypes().get(60)).isEqualTo("FINAL");
    }

    @Test
    void deepSeekV4HashLayersComeFirstAndCompressRatiosAreTruncatedWithANotice() {
        SegmenterConfig c =
                SegmenterConfig.resolve(config("deepseek-ai--DeepSeek-V4-Flash_config.json"), null, null, null);
        assertThat(c.layerTypes()).hasSize(43);
        // compress_ratios = 0,0,4,128,4,128,...,4,0 (44 entries); num_hash_layers = 3
        assertThat(c.layerTypes().subList(0, 6))
                .containsExactly("FIRST", "HASH", "HASH", "C128_HEAVY", "C4_LIGHT", "C128_HEAVY");
        assertThat(c.layerTypes().get(41)).isEqualTo("C128_HEAVY");
        assertThat(c.layerTypes().get(42)).isEqualTo("FINAL");
        assertThat(c.layerTypes().subList(3, 42)).doesNotContain("HASH", "LAYER", "FULL_ATTN");
        assertThat(Collections.frequency(c.layerTypes(), "C4_LIGHT")).isEqualTo(19);
        assertThat(Collections.frequency(c.layerTypes(), "C128_HEAVY")).isEqualTo(20);
        assertThat(c.notices()).anySatisfy(n -> assertThat(n).contains("44 entries for 43 layers"));
        assertThat(c.halfLabels()).containsExactly("attn", "ffn");
    }

    @Test
    void qwenDenseModelHasPositionalTypesOnly() {
        SegmenterConfig c = SegmenterConfig.resolve(config("Qwen--Qwen3-8B_config.json"), null, null, null);
        assertThat(c.layerTypes()).hasSize(36).startsWith("FIRST").endsWith("FINAL");
        assertThat(c.layerTypes().subList(1, 35)).containsOnly("LAYER");
    }

    @Test
    void optionsOverrideConfigAndProfile() {
        SegmenterConfig c = SegmenterConfig.resolve(config("Qwen--Qwen3-8B_config.json"), "dsv3_mla", "my_anchor", 12);
        assertThat(c.profileName()).isEqualTo("dsv3_mla");
        assertThat(c.anchor()).isEqualTo("my_anchor");
        assertThat(c.numLayers()).isEqualTo(12);
        assertThat(c.layerTypes()).hasSize(12);
        assertThat(c.notices()).anySatisfy(n -> assertThat(n).contains("overrides num_hidden_layers 36"));
    }

    @Test
    void noConfigMeansGenericWithDetection() {
        SegmenterConfig c = SegmenterConfig.resolve(null, null, null, null);
        assertThat(c.profileName()).isEqualTo("generic");
        assertThat(c.anchor()).isNull();
        assertThat(c.numLayers()).isNull();
        assertThat(c.layerType(0, 3)).isEqualTo("FIRST");
        assertThat(c.layerType(1, 3)).isEqualTo("LAYER");
        assertThat(c.layerType(2, 3)).isEqualTo("FINAL");
    }

    @Test
    void compressRatiosShorterThanTheLayersGiveANoticeNotAnException() {
        var cfg = new ModelConfig(io.llmprof.events.Json.mapper()
                .createObjectNode()
                .put("num_hidden_layers", 5)
                .set("compress_ratios", io.llmprof.events.Json.mapper().valueToTree(new int[] {0, 4, 7})));
        LayerTyping.Typing t = LayerTyping.of(cfg, 5);
        assertThat(t.types()).containsExactly("FIRST", "C4_LIGHT", "CR7", "LAYER", "FINAL");
        assertThat(t.notices()).singleElement().asString().contains("3 entries for 5 layers");
    }

    @Test
    void userProfilesOverrideBuiltInsAndAddNewOnesWithoutRecompiling(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("mine.json");
        Files.writeString(
                file,
                """
                {"profiles": [
                  {"name": "dsv3_mla", "anchor": "my_mla_kernel", "blocks_per_layer": 1, "role": "opens",
                   "select_when": {"key": "kv_lora_rank", "test": "positive"}},
                  {"name": "llama_custom", "anchor": "my_attn", "blocks_per_layer": 2, "role": "closes",
                   "half_labels": ["attn", "mlp"], "select_when": {"key": "rope_theta", "test": "present"},
                   "categories": [{"category": "my_gemm", "pattern": "^my_gemm"}]}
                ],
                 "universal_categories": [{"category": "special", "pattern": "special_kernel"}]}
                """);
        ProfileCatalog catalog = ProfileCatalog.withUserProfiles(file);
        SegmenterConfig v3 =
                SegmenterConfig.resolve(config("deepseek-ai--DeepSeek-V3_config.json"), null, null, null, catalog);
        assertThat(v3.profileName()).isEqualTo("llama_custom"); // new profiles are tried first; V3 has rope_theta
        SegmenterConfig mla = SegmenterConfig.resolve(null, "dsv3_mla", null, 4, catalog);
        assertThat(mla.anchor()).isEqualTo("my_mla_kernel");
        SegmenterConfig custom = SegmenterConfig.resolve(null, "llama_custom", null, 4, catalog);
        assertThat(custom.role()).isEqualTo(AnchorRole.CLOSES);
        assertThat(custom.categories().get(0).category()).isEqualTo("my_gemm");
        assertThat(custom.categories()).extracting(r -> r.category()).contains("special", "allreduce");
        assertThat(catalog.find("dsv4_csa_hca")).isPresent();
    }

    @Test
    void configRoundTripsThroughTheSharedJsonMapper() throws Exception {
        SegmenterConfig c =
                SegmenterConfig.resolve(config("deepseek-ai--DeepSeek-V4-Flash_config.json"), null, null, null);
        var mapper = io.llmprof.events.Json.mapper();
        SegmenterConfig back = mapper.readValue(mapper.writeValueAsBytes(c), SegmenterConfig.class);
        assertThat(back).isEqualTo(c);
        assertThat(mapper.writeValueAsString(back)).contains("\"role\":\"closes\"", "\"blocks_per_layer\":2");
    }

    @Test
    void unknownProfileOrBadRegexIsAClearError() {
        assertThatThrownBy(() -> SegmenterConfig.resolve(null, "nope", null, null))
                .hasMessageContaining("unknown profile nope");
        assertThatThrownBy(() -> SegmenterConfig.resolve(null, null, "(unclosed", null))
                .hasMessageContaining("anchor kernel regex");
        assertThatThrownBy(() -> SegmenterConfig.resolve(null, null, null, 0)).hasMessageContaining(">= 1");
    }
}
