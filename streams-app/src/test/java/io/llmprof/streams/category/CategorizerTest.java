package io.llmprof.streams.category;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.SegmenterConfig;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CategorizerTest {
    static Categorizer forProfile(String profile) {
        SegmenterConfig c = SegmenterConfig.resolve(null, profile, "x", 1);
        return new Categorizer(c.categories(), c.allreducePattern());
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                // all-reduce, every variant, case-insensitive, before anything else (fused allreduce+rmsnorm)
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL | allreduce",
                "ncclKernel_AllReduce_RING_LL_Sum_float | allreduce",
                "vllm::cross_device_reduce_1stage<__nv_bfloat16, 8> | allreduce",
                "allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, RMSNorm> | allreduce",
                "vllm::multimem_all_reduce_kernel | allreduce",
                "one_shot_all_reduce_kernel<float> | allreduce",
                "trtllm::two_shot_kernel<bf16> | allreduce",
                "ALLREDUCE_custom | allreduce",
                // GEMMs never lose to the broad quant rule
                "deep_gemm::fp8_gemm_kernel<128, 128> | gemm_fp8",
                "_w8a8_block_fp8_matmul | gemm_fp8",
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64 | gemm_bf16",
                "nvjet_tst_64x8_64x16_4x1_v_bz_TNT | gemm_bf16",
                "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x32x256 | gemm_bf16",
                "cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1> | gemm_bf16",
                "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64E | rmsnorm",
                "dynamic_per_token_scaled_fp8_quant_kernel | quant",
                "per_token_group_quant_8bit | quant",
                // attention in general; an Fp8 template argument does not make it quant
                "paged_attention_ll4mi_QKV_mfma16_kernel<0, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0> | attention",
                "pytorch_flash::flash_fwd_kernel<traits> | attention",
                "flash::flash_fwd_splitkv_combine_kernel<traits> | attention",
                "kernel_unified_attention_3d | attention",
                "(anonymous namespace)::store_kvcache<2048l, 4, false, long> | attention",
                "ck_tile::FmhaBatchPrefillWithPagedKVCacheKernel<x> | attention",
                // the rest of the seed set
                "flash_fwd_mla_combine_kernel<bf16> | mla",
                "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu | moe",
                "fused_moe_kernel | moe",
                "_topk_forward | topk",
                "vllm::rotary_embedding_kernel<c10::BFloat16, true> | rope",
                "_ZN7sgl_hip10activation18act_and_mul_kernelI | activation",
                "ck_tile::Rmsnorm2dFwd<x> | rmsnorm",
                "hadamard_transform_kernel | hadamard",
                "mhc_post_tilelang | mhc",
                "at::native::reduce_kernel<512, 1> | other",
            })
    void universalRulesFirstMatchWins(String name, String category) {
        assertThat(forProfile("generic").categoryOf(name)).isEqualTo(category);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "mhc_post_tilelang | mhc_post",
                "mhc_pre_tilelang | mhc_pre",
                "hc_sinkhorn_kernel | mhc",
                "paged_mqa_logits_kernel | paged_mqa",
                "c128_sparse_prefill_kernel | c128_prefill",
                "c4_sparse_prefill_kernel | c4_prefill",
                "ncclDevKernel_AllReduce_Sum | allreduce",
            })
    void profileRulesComeBeforeUniversalOnes(String name, String category) {
        assertThat(forProfile("dsv4_csa_hca").categoryOf(name)).isEqualTo(category);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"MEMCPY, memcpy", "MEMSET, memset"})
    void copiesAreCategorisedByKind(TraceEvent.Kind kind, String category) {
        assertThat(forProfile("generic").categoryOf(kind, "Memcpy DtoD")).isEqualTo(category);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "ncclDevKernel_AllReduce_Sum_bf16, true",
        "cross_device_reduce_2stage, true",
        "ncclDevKernel_SendRecv, false",
        "reduce_kernel, false"
    })
    void allReduceCountIsCaseInsensitive(String name, boolean allReduce) {
        assertThat(forProfile("generic").isAllReduce(name)).isEqualTo(allReduce);
    }
}
