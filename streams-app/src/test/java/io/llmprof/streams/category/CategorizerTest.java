package io.llmprof.streams.category;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.events.TraceEvent;
import io.llmprof.streams.boundary.SegmenterConfig;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CategorizerTest {
    static Categorizer forProfile(String profile) {
        return SegmenterConfig.resolve(null, profile, "x", 1).categorizer();
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

    /**
     * Issue 17's names, as the engines emit them (looked up in their sources and published traces: TensorRT-LLM's
     * trtllm-gen batched GEMM cubins and moeAlltoAllKernels.cu, DeepEP's intranode/internode(_ll) kernels and
     * DeepSeek's profile-data names, vLLM/SGLang custom all-reduce, torch symmetric memory, NCCL).
     */
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                // MXFP4 / FP8 expert GEMMs of TensorRT-LLM's generated kernels: moe, not activation for swiGlu
                "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x64x256_s3_et128x64_m128x64x32_cga1x1x1_16dp256b_TN_transOut_schedS"
                        + "_biasM_bN_ldgsts_tmaOpt_clmp_swiGlu_dynBatch_sm100f | moe",
                "bmm_E2m1_E2m1E2m1_Fp32_t128x64x256_s6_et128x64_m128x64x64_cga1x1x1_16dp256b_TN_transOut_schedS_bN"
                        + "_ldgsts_tmaOpt_clmp_swiGlu_dynBatch_sm100a | moe",
                "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_Ab32_Bb32_t128x8x512_s3_et128x8_m128x8x32_cga1x1x1_16dp256b_rM_TN"
                        + "_transOut_schPd2x1x2x3_bN_ldgsts_ldgstsSf_rgTma_clmp_dynB_sm100f | moe",
                "moe::dev::routing::routingCustom::routingIndicesSmallBsKernel<KernelParams<float, __nv_bfloat16, 1024,"
                        + " 16>> | moe",
                // vLLM / triton_kernels MXFP4 expert GEMMs (OGS), fused swiglu or not
                "_matmul_ogs_NNT_bf16xbf16xmxfp4_128x128x128x1_swiglu | moe",
                "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1 | moe",
                // expert-parallel dispatch / combine: communication, before moe
                "deep_ep::intranode::dispatch<8, 768, 6144> | ep_comm",
                "deep_ep::intranode::cached_notify_combine<8> | ep_comm",
                "deep_ep::internode_ll::combine<7168, 9, false> | ep_comm",
                "deep_ep::layout::get_dispatch_layout<256, 32, 8> | ep_comm",
                "dpsk::ep::internode::dispatch_ll<true, 8, 7168> | ep_comm",
                "dpsk::ep::internode::combine_ll<8, 7168> | ep_comm",
                "tensorrt_llm::kernels::moe_comm::moeA2ADispatchKernel<8, __nv_bfloat16> | ep_comm",
                "tensorrt_llm::kernels::moe_comm::moeA2ACombineKernel<__nv_bfloat16, 8> | ep_comm",
                // custom, symmetric-memory, one-shot / two-shot all-reduces
                "void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8> | allreduce",
                "allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8, true> | allreduce",
                "tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8> | allreduce",
                "tensorrt_llm::kernels::twoShotAllReduceKernel<__nv_bfloat16, 8> | allreduce",
                "c10d::symmetric_memory::multimem_all_reduce_kernel<__nv_bfloat16, 16> | allreduce",
                "c10d::symmetric_memory::two_shot_all_reduce_kernel<__nv_bfloat16, 8> | allreduce",
                "quickreduce::allreduce_prototype_twoshot<half> | allreduce",
                // every other collective and point-to-point: communication too
                "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t | collective",
                "ncclDevKernel_AllGather_RING_LL | collective",
                "ncclKernel_Broadcast_RING_LL_Sum_int8_t | collective",
                "c10d::symmetric_memory::multimem_all_gather_kernel<16> | collective",
                // a template argument no longer decides for the kernel: ck_tile FMHA with BlockAttentionQuantScaleEnum
                "_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipeline"
                        + "QRKSVSAsyncINS_28BlockAttentionQuantScaleEnumE0EEEEEEvv | attention",
                // the library name fbgemm is not a GEMM
                "fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)> | other",
                "fbgemm_gpu::(anonymous namespace)::_compute_FP8_quantize_cuda_kernel<float> | quant",
            })
    void issue17NameRules(String name, String category) {
        Categorizer c = forProfile("generic");
        assertThat(c.categoryOf(KernelNames.canonical(name))).isEqualTo(category);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "nccl:all_reduce | allreduce",
                "c10d::allreduce_ | allreduce",
                "symm_mem::two_shot_all_reduce_ | allreduce",
                "symm_mem::multimem_all_reduce_ | allreduce",
                "_C_custom_ar::all_reduce | allreduce",
                "vllm::all_reduce | allreduce",
                "trtllm::allreduce | allreduce",
                "nccl:all_to_all | collective",
                "nccl:_all_gather_base | collective",
                "c10d::alltoall_base_ | collective",
                "symm_mem::all_to_all_vdev | collective",
                "deep_ep::Buffer::dispatch | ep_comm",
                "trtllm::moe_a2a_dispatch | ep_comm",
                "vllm::moe_forward | moe",
                "vllm::outplace_fused_experts | moe",
                "_moe_C::topk_softmax | moe",
                "aten::_grouped_mm | moe",
                "trtllm::fp4_block_scale_moe_runner | moe",
                "vllm::unified_attention_with_output | attention",
                "aiter::mha_batch_prefill | attention",
                "_C_cache_ops::reshape_and_cache_flash | attention",
                "aten::_flash_attention_forward | attention",
                "aten::_scaled_mm | gemm_fp8",
                "aten::mm | gemm_bf16",
                "aten::addmm | gemm_bf16",
                "aiter::gemm_a16w16 | gemm_bf16",
                "_C::fused_add_rms_norm | rmsnorm",
                "_C::rms_norm_dynamic_per_token_quant | rmsnorm",
                "_C::static_scaled_fp8_quant | quant",
                "_C::rotary_embedding | rope",
                "sgl_kernel::silu_and_mul | activation",
            })
    void launchContextRules(String op, String category) {
        assertThat(forProfile("generic").contextCategoryOf(op)).isEqualTo(category);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "ProfilerStep#6",
        "aten::copy_",
        "aten::empty",
        "record_param_comms",
        "fbgemm::permute_2D_sparse_data",
        "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk32785sqsq1sqsk1024)",
        "## forward ##"
    })
    void scopesAndGenericOpsSayNothing(String op) {
        assertThat(forProfile("generic").contextCategoryOf(op)).isNull();
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
