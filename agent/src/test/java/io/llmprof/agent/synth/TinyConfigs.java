package io.llmprof.agent.synth;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Small model configs written by the tests themselves, so these tests need no shared data. */
final class TinyConfigs {
    private TinyConfigs() {}

    static final String LLAMA =
            """
            {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 4,
             "hidden_size": 512, "intermediate_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2,
             "vocab_size": 1000, "torch_dtype": "bfloat16"}
            """;

    static final String MLA =
            """
            {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "num_hidden_layers": 5,
             "hidden_size": 512, "intermediate_size": 1024, "moe_intermediate_size": 128, "num_attention_heads": 8,
             "num_key_value_heads": 8, "kv_lora_rank": 64, "q_lora_rank": 96, "qk_rope_head_dim": 16,
             "qk_nope_head_dim": 32, "v_head_dim": 32, "n_routed_experts": 16, "num_experts_per_tok": 4,
             "n_shared_experts": 1, "first_k_dense_replace": 2, "moe_layer_freq": 1, "vocab_size": 1000,
             "quantization_config": {"quant_method": "fp8"}}
            """;

    /** compress_ratios has one entry more than the layers (an MTP layer), as the real DeepSeek-V4 configs do. */
    static final String V4 =
            """
            {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "num_hidden_layers": 5,
             "hidden_size": 512, "moe_intermediate_size": 128, "num_attention_heads": 8, "num_key_value_heads": 1,
             "head_dim": 64, "q_lora_rank": 96, "qk_rope_head_dim": 16, "n_routed_experts": 16,
             "num_experts_per_tok": 4, "n_shared_experts": 1, "vocab_size": 1000, "num_hash_layers": 2,
             "compress_ratios": [0, 4, 128, 4, 0, 0], "index_topk": 64, "index_n_heads": 8, "index_head_dim": 32,
             "hc_mult": 4, "o_groups": 2, "sliding_window": 32}
            """;

    static Path write(Path dir, String name, String json) throws IOException {
        Path file = dir.resolve(name + "_config.json");
        Files.writeString(file, json);
        return file;
    }

    static Path llama(Path dir) throws IOException {
        return write(dir, "tiny-llama", LLAMA);
    }
}
