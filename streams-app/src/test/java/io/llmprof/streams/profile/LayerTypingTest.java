package io.llmprof.streams.profile;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.streams.boundary.SegmenterConfig;
import io.llmprof.streams.support.SharedData;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Layer types and compress ratios of every model config in ../shared/data/model-configs (values read by
 * hand from the config files: num_hidden_layers, first_k_dense_replace, moe_layer_freq, num_hash_layers,
 * decoder_sparse_step, compress_ratios).
 */
class LayerTypingTest {
    static SegmenterConfig resolve(String file) {
        return SegmenterConfig.resolve(SharedData.file("model-configs/" + file), null, null, null);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        // file, profile, layers, first middle types, count of the middle type
        "deepseek-ai--DeepSeek-V3_config.json, dsv3_mla, 61, DENSE DENSE MOE, MOE, 57",
        "deepseek-ai--DeepSeek-V3.2_config.json, dsv3_mla, 61, DENSE DENSE MOE, MOE, 57",
        "moonshotai--Kimi-K2-Instruct_config.json, dsv3_mla, 61, MOE MOE MOE, MOE, 59",
        "Qwen--Qwen3-30B-A3B_config.json, generic, 48, MOE MOE MOE, MOE, 46",
        "Qwen--Qwen3-235B-A22B_config.json, generic, 94, MOE MOE MOE, MOE, 92",
        "Qwen--Qwen3-8B_config.json, generic, 36, LAYER LAYER LAYER, LAYER, 34",
        "meta-llama--Meta-Llama-3.1-8B_config.json, generic, 32, LAYER LAYER LAYER, LAYER, 30",
        "meta-llama--Meta-Llama-3.1-70B_config.json, generic, 80, LAYER LAYER LAYER, LAYER, 78",
    })
    void everyConfigTypesItsLayersFirstMiddleFinal(
            String file, String profile, int layers, String head, String middle, int middleCount) {
        SegmenterConfig c = resolve(file);
        assertThat(c.profileName()).isEqualTo(profile);
        List<String> t = c.layerTypes();
        assertThat(t).hasSize(layers);
        assertThat(t.get(0)).isEqualTo("FIRST");
        assertThat(t.get(layers - 1)).isEqualTo("FINAL");
        assertThat(t.subList(1, 4)).containsExactly(head.split(" "));
        assertThat(Collections.frequency(t, middle)).isEqualTo(middleCount);
        assertThat(c.compressRatios()).isEmpty();
        assertThat(c.compressRatio(5, layers)).isNull();
    }

    @Test
    void deepSeekV4ProHasHashLayersFirstAndAlternatingCompressionTruncatedToItsLayers() {
        SegmenterConfig c = resolve("deepseek-ai--DeepSeek-V4-Pro_config.json");
        assertThat(c.profileName()).isEqualTo("dsv4_csa_hca");
        List<String> t = c.layerTypes();
        assertThat(t).hasSize(61);
        // compress_ratios = 128, 128, 4, 128, 4, ... 128, 4, 0 (62 entries); num_hash_layers = 3
        assertThat(t.subList(0, 5)).containsExactly("FIRST", "HASH", "HASH", "C128_HEAVY", "C4_LIGHT");
        assertThat(Collections.frequency(t, "C128_HEAVY")).isEqualTo(29); // layers 3, 5, .., 59
        assertThat(Collections.frequency(t, "C4_LIGHT")).isEqualTo(28); // layers 4, 6, .., 58
        assertThat(t.get(60)).isEqualTo("FINAL");
        assertThat(c.notices()).anySatisfy(n -> assertThat(n).contains("62 entries for 61 layers"));
        assertThat(c.compressRatios()).hasSize(61);
        assertThat(c.compressRatio(0, 61)).isEqualTo(128);
        assertThat(c.compressRatio(2, 61)).isEqualTo(4);
        assertThat(c.compressRatio(60, 61)).isEqualTo(4); // the 62nd entry (0, the MTP layer) is dropped
    }

    @Test
    void deepSeekV4FlashCompressRatiosAreTheCrColumn() {
        SegmenterConfig c = resolve("deepseek-ai--DeepSeek-V4-Flash_config.json");
        assertThat(c.compressRatios()).hasSize(43);
        assertThat(c.compressRatio(0, 43)).isZero();
        assertThat(c.compressRatio(3, 43)).isEqualTo(128);
        assertThat(c.compressRatio(42, 43)).isEqualTo(4);
        // a pass with another layer count than configured gets no c_r (types fall back to FIRST/LAYER/FINAL)
        assertThat(c.compressRatio(3, 44)).isNull();
        assertThat(c.layerType(3, 44)).isEqualTo("LAYER");
    }
}
