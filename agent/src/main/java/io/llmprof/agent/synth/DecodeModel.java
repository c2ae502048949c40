package io.llmprof.agent.synth;

import io.llmprof.agent.synth.KernelSpec.Comm;
import io.llmprof.agent.synth.KernelSpec.Geometry;
import io.llmprof.agent.synth.KernelSpec.LaunchApi;
import io.llmprof.agent.synth.KernelSpec.OpSpec;
import io.llmprof.agent.synth.KernelSpec.Section;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds the kernel sequence of one decode pass (an H100, SGLang/vLLM-style serving stack) from a model config.
 * Durations are means from a memory-bound model (weights and KV cache over ~2.6 TB/s, with floors for small
 * kernels); the simulator adds jitter.
 */
final class DecodeModel {
    /** Effective HBM bandwidth in bytes per µs (~2.6 TB/s on H100 SXM). */
    private static final double HBM_BYTES_PER_US = 2.6e6;
    /** NVLink all-reduce bus bandwidth in bytes per µs for small decode messages. */
    private static final double NVLINK_BYTES_PER_US = 5.0e4;

    private static final String BF16 = "\"c10::BFloat16\"";
    private static final String FP8 = "\"c10::Float8_e4m3fn\"";
    private static final String FLOAT = "\"float\"";
    private static final String LONG = "\"long int\"";
    private static final String INT = "\"int\"";
    private static final String SCALAR = "\"Scalar\"";

    static final String NCCL_ALL_REDUCE =
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
    static final String NCCL_ALL_GATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";

    private static final String RMSNORM = "void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*,"
            + " __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, unsigned int, float, float)";
    private static final String FUSED_ADD_RMSNORM = "void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>("
            + "__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)";
    private static final String EMBEDDING =
            "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16,"
                    + " long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>,"
                    + " at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long"
                    + " const, unsigned int>, int, int, unsigned int, unsigned int, long)";
    private static final String ROPE = "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u,"
            + " __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*, long*,"
            + " unsigned int, unsigned int, unsigned int, unsigned int, unsigned long, unsigned long, unsigned long,"
            + " unsigned long, unsigned long, unsigned long, unsigned long, unsigned long)";
    private static final String ROPE_MLA = "void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<false, 64u, 8u,"
            + " 16u, __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*,"
            + " long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned long, unsigned long, unsigned"
            + " long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long)";
    private static final String DECODE_ATTENTION = "void flashinfer::BatchDecodeWithPagedKVCacheKernel<"
            + "(flashinfer::PosEncodingMode)0, 2u, 4u, 8u, 16u, 1u, 8u, flashinfer::DefaultAttention<false, false,"
            + " false, false>, flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >("
            + "flashinfer::BatchDecodeParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)";
    private static final String ACT_AND_MUL = "void flashinfer::activation::act_and_mul_kernel<__nv_bfloat16,"
            + " &(float silu<float>(float const&))>(__nv_bfloat16*, __nv_bfloat16 const*, int)";
    private static final String SPLITK_REDUCE = "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16,"
            + " float, __nv_bfloat16, false, false, true, true, false>(cublasLt::cublasSplitKParams<float>, float"
            + " const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float"
            + " const*, __nv_bfloat16*, void*, long, float*, int*)";
    private static final String GEMM_QKV = "nvjet_tst_64x8_64x16_4x1_v_bz_TNT";
    private static final String GEMM_O = "nvjet_tst_64x8_64x16_2x1_v_bz_splitK_TNT";
    private static final String GEMM_GATE_UP = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64"
            + "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
    private static final String GEMM_DOWN = "nvjet_tst_128x8_64x12_2x1_v_bz_splitK_TNT";
    private static final String GEMM_ROUTER = "nvjet_tst_64x8_64x16_1x1_v_bz_TNN";
    private static final String GEMM_LM_HEAD = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
            + "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
    private static final String GEMM_BMM = "nvjet_tst_128x16_64x8_2x1_v_bz_NNT";
    private static final String SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float,"
            + " float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)";
    private static final String SAMPLING = "void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u,"
            + " (cub::CUB_200200_900_NS::BlockScanAlgorithm)2, (cub::CUB_200200_900_NS::BlockReduceAlgorithm)2, 4u,"
            + " false, float, int>(float*, int*, int*, float*, int*, float*, unsigned int, unsigned int, unsigned int)";
    private static final String TOPK_SOFTMAX = "void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int, float,"
            + " (vllm::moe::ScoringFunc)0>(float const*, bool const*, int*, float*, int, int*, int, int, int, bool)";
    private static final String MOE_ALIGN = "void moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int,"
            + " int, int, int, unsigned long, int*)";
    private static final String MOE_SORT =
            "void count_and_sort_expert_tokens_kernel<int>(int const*, int*, int*," + " unsigned long)";
    private static final String FUSED_MOE = "fused_moe_kernel";
    private static final String MOE_SUM =
            "void moe_sum_reduce_kernel<c10::BFloat16, 8>(c10::BFloat16 const*," + " c10::BFloat16*, int, int, float)";
    private static final String ADD = "void at::native::vectorized_elementwise_kernel<4,"
            + " at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int,"
            + " at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)";
    private static final String QUANT = "void per_token_group_quant_8bit_kernel<c10::BFloat16, c10::Float8_e4m3fn,"
            + " true, true, float>(c10::BFloat16 const*, void*, float*, int, int, int, float, float, float, int, int)";
    private static final String MLA_DECODE = "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576,"
            + " 64, 64, 8, cutlass::bfloat16_t, 512>, flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64,"
            + " 8, cutlass::bfloat16_t, 512> > >(Flash_fwd_mla_params)";
    private static final String MLA_COMBINE =
            "void flash::flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, 512, 64, 32>(Flash_fwd_mla_params)";
    private static final String MLA_METADATA = "void flash::get_mla_metadata_kernel(Mla_metadata_params)";
    private static final String SPARSE_MLA_DECODE = "void"
            + " sm90::decode::sparse_fp8::flash_fwd_splitkv_mla_fp8_sparse_kernel<sm90::decode::sparse_fp8::"
            + "KernelTemplate<(ModelType)1, 64> >(SparseAttnDecodeParams)";
    private static final String SPARSE_MLA_COMBINE = "void smxx::decode::flash_fwd_mla_combine_kernel<"
            + "cutlass::bfloat16_t, 512, 8, 160, false>(CombineParams)";
    private static final String HADAMARD =
            "void fast_hadamard_transform_kernel<fast_hadamard_transform_kernel_traits<8,"
                    + " 7, c10::BFloat16> >(HadamardParamsBase)";
    private static final String MQA_LOGITS = "void deep_gemm::sm90_fp8_paged_mqa_logits<1u, 64u, 128u, 64u, true,"
            + " false, 3u, 3u, 256u, 128u, 512u>(unsigned int, unsigned long, unsigned long, unsigned int const*,"
            + " unsigned int const*, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, float*)";
    private static final String MQA_METADATA = "void deep_gemm::smxx_paged_mqa_logits_metadata<32u, 64u, 132u>(unsigned"
            + " int, unsigned int, unsigned int const*, unsigned int*)";
    private static final String TOPK_DECODE =
            "void vllm::topk_transform_decode_kernel<512>(float const*, int*, int" + " const*, int, int, int)";
    private static final String SET_MLA_KV = "set_mla_kv_buffer_kernel";
    private static final String MOE_FUSED_GATE =
            "void moe_fused_gate_kernel<float, 256, 8, 32, 4>(void*, void*, float*,"
                    + " int*, int, int, int, int, int, int, double)";
    private static final String HC_PRENORM_GEMM = "void deep_gemm::sm90_tf32_hc_prenorm_gemm_impl<24u, 16384u, 64u,"
            + " 32u, 64u, 1u, 128u, 12u, 128u, 128u>(unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st,"
            + " float*)";
    private static final String MHC_PRE = "mhc_pre_big_fuse_with_norm_tilelang_kernel";
    private static final String MHC_POST = "mhc_post_tilelang_kernel";
    private static final String HC_HEAD = "hc_head_fuse_tilelang_kernel";
    private static final String HC_EXPAND = "triton_poi_fused_repeat_unsqueeze_0";
    private static final String VLLM_RMSNORM = "void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*,"
            + " c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)";
    private static final String V4_QNORM_ROPE = "void vllm::deepseek_v4_fused_ops::"
            + "fusedDeepseekV4QNormRopeKVRopeQuantInsertKernelReducedGrid<c10::BFloat16, 64>(c10::BFloat16 const*,"
            + " c10::BFloat16*, c10::BFloat16 const*, unsigned char*, long const*, long const*, float const*, float,"
            + " int, int, int, int, int)";
    private static final String INV_ROPE = "_fused_inv_rope_fp8_quant_per_head";
    private static final String WO_A_QUANT = "void vllm::fp8_wo_a_group_major_quant_kernel<c10::BFloat16, 8>("
            + "c10::BFloat16 const*, c10::Float8_e4m3fn*, float*, int, int, int)";
    private static final String TOPK_SOFTPLUS = "void vllm::moe::topk_softplus_sqrt_kernel<256, 6>(float const*, float"
            + " const*, float*, int*, int, int, float)";
    private static final String HASH_ROUTE =
            "void vllm::moe::hash_topk_route_kernel<6>(long const*, int const*," + " float*, int*, int, int)";
    private static final String MARLIN_MOE = "void marlin_moe_wna16::Marlin<1125899906909960l, 562949953487106l,"
            + " 1125899906909960l, 2814749767106568l, 128, 1, 8, 4, true, 4, 2, false>(int4 const*, int4 const*, int4*,"
            + " int4*, int4 const*, float const*, int4 const*, float const*, int4 const*, int const*, int const*, int"
            + " const*, int const*, float const*, int, bool, int, int, int, int, int*, bool, bool, bool)";
    private static final String VLLM_ACT_AND_MUL = "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16"
            + " vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*,"
            + " int)";
    private static final String MOE_SUM_V4 = "moe_sum_kernel";
    private static final String STORE_KV = "store_kvcache_kernel";
    private static final String KV_INDICES = "create_flashinfer_kv_indices_triton";

    private static final Geometry GEMM_GEO = new Geometry(132, 1, 1, 384, 168, 231_424);
    private static final Geometry TRITON_GEO = new Geometry(64, 1, 1, 128, 40, 16_384);
    private static final Geometry COMM_GEO = new Geometry(24, 1, 1, 640, 96, 87_568);

    private final ModelConfig config;
    private final int layers;
    private final int tp;
    private final int bs;
    private final int ctx;
    private final List<KernelSpec> kernels = new ArrayList<>();

    private Section section = Section.PROLOGUE;
    private int layer;
    private OpSpec pendingOp;

    private DecodeModel(ModelConfig config, int layers, int tp, int bs, int ctx) {
        this.config = config;
        this.layers = layers;
        this.tp = tp;
        this.bs = bs;
        this.ctx = ctx;
    }

    static PassTemplate build(ModelConfig config, int layers, int ranks, int batchSize, int contextLen) {
        Profile profile = Profile.of(config);
        DecodeModel model = new DecodeModel(config, layers, ranks, batchSize, contextLen);
        switch (profile) {
            case DSV4_CSA_HCA -> model.buildV4();
            case DSV3_MLA -> model.buildV3();
            case GENERIC -> model.buildGeneric();
        }
        return PassTemplate.of(config, profile, layers, model.kernels);
    }

    // ---- generic llama / qwen (SGLang + flashinfer) ----

    private void buildGeneric() {
        int h = config.hiddenSize();
        section = Section.PROLOGUE;
        op(
                "aten::embedding",
                dims(d(config.vocabSize() / tp, h), d(bs), d(), d(), d()),
                types(BF16, LONG, SCALAR, SCALAR, SCALAR));
        k(EMBEDDING, small(2.2) + bytesUs((long) bs * h * 2), elementwise(bs * 4));
        op("sglang::create_flashinfer_kv_indices", dims(d(bs + 1), d(bs), d(bs, ctx)), types(INT, INT, INT));
        k(KV_INDICES, small(3.1), TRITON_GEO, LaunchApi.CU_LAUNCH_KERNEL);
        for (int l = 0; l < layers; l++) {
            section = Section.LAYER;
            layer = l;
            int qHeads = Math.max(1, config.numAttentionHeads() / tp);
            int kvHeads = Math.max(1, config.numKeyValueHeads() / tp);
            int hd = config.headDim();
            norm(
                    l == 0 ? RMSNORM : FUSED_ADD_RMSNORM,
                    l == 0 ? "sgl_kernel::rmsnorm" : "sgl_kernel::fused_add_rmsnorm",
                    h);
            gemm(GEMM_QKV, (long) (qHeads + 2 * kvHeads) * hd, h, 2, false);
            if (config.qkNorm()) {
                op("sgl_kernel::rmsnorm", dims(d(bs * qHeads, hd), d(hd), d(), d()), types(BF16, BF16, SCALAR, SCALAR));
                k(RMSNORM, small(2.6), elementwise(bs * qHeads / 4 + 1));
                op(
                        "sgl_kernel::rmsnorm",
                        dims(d(bs * kvHeads, hd), d(hd), d(), d()),
                        types(BF16, BF16, SCALAR, SCALAR));
                k(RMSNORM, small(2.4), elementwise(bs * kvHeads / 4 + 1));
            }
            op(
                    "sgl_kernel::apply_rope_pos_ids_cos_sin_cache",
                    dims(d(bs, qHeads, hd), d(bs, kvHeads, hd), d(bs), d(131072, hd)),
                    types(BF16, BF16, LONG, FLOAT));
            k(ROPE, small(3.4), elementwise(bs * 2));
            op("sglang::set_kv_buffer", dims(d(bs, kvHeads, hd), d(bs, kvHeads, hd), d(bs)), types(BF16, BF16, LONG));
            k(STORE_KV, small(2.9), TRITON_GEO, LaunchApi.CU_LAUNCH_KERNEL);
            long kvBytes = (long) bs * ctx * kvHeads * hd * 2 * 2;
            op(
                    "flashinfer::batch_decode_with_paged_kv_cache",
                    dims(d(bs, qHeads, hd), d(bs * ctx / 16, 2, 16, kvHeads, hd), d(bs + 1)),
                    types(BF16, BF16, INT));
            k(DECODE_ATTENTION, 4.0 + bytesUs(kvBytes), new Geometry(bs, kvHeads, 1, 128, 96, 34_816), true);
            gemm(GEMM_O, h, (long) qHeads * hd, 2, true);
            allReduce(h);
            norm(FUSED_ADD_RMSNORM, "sgl_kernel::fused_add_rmsnorm", h);
            if (config.isMoe(l)) {
                qwenMoe(h);
            } else {
                denseMlpBf16(h, config.intermediateSize());
            }
            allReduce(h);
        }
        section = Section.EPILOGUE;
        norm(FUSED_ADD_RMSNORM, "sgl_kernel::fused_add_rmsnorm", h);
        sampling(h, GEMM_LM_HEAD);
    }

    private void denseMlpBf16(int h, int inter) {
        long local = Math.max(1, inter / tp);
        gemm(GEMM_GATE_UP, 2 * local, h, 2, false);
        op("sgl_kernel::silu_and_mul", dims(d(bs, local), d(bs, 2 * local)), types(BF16, BF16));
        k(ACT_AND_MUL, small(2.8), elementwise(bs));
        gemm(GEMM_DOWN, h, local, 2, true);
    }

    private void qwenMoe(int h) {
        int experts = config.routedExperts();
        int topk = config.expertsPerTok();
        long inter = Math.max(1, config.moeIntermediateSize() / tp);
        gemm(GEMM_ROUTER, experts, h, 2, false);
        op("sgl_kernel::topk_softmax", dims(d(bs, topk), d(bs, topk), d(bs, experts)), types(FLOAT, INT, FLOAT));
        k(TOPK_SOFTMAX, small(3.0), elementwise(bs));
        op(
                "sgl_kernel::moe_align_block_size",
                dims(d(bs, topk), d(), d(), d(), d(), d()),
                types(INT, SCALAR, SCALAR, INT, INT, INT));
        k(MOE_ALIGN, small(3.6), new Geometry(1, 1, 1, 1024, 32, 8_192));
        k(MOE_SORT, small(2.4), elementwise(4));
        double expertBytes = uniqueExperts(experts, topk) * 3.0 * h * inter * 2;
        op(
                "sglang::inplace_fused_experts",
                dims(d(bs, h), d(experts, 2 * inter, h), d(experts, h, inter), d(bs, topk), d(bs, topk)),
                types(BF16, BF16, BF16, FLOAT, INT));
        k(FUSED_MOE, 4.0 + bytesUs((long) (expertBytes * 2 / 3)), TRITON_GEO, LaunchApi.CU_LAUNCH_KERNEL);
        k(ACT_AND_MUL, small(2.7), elementwise(bs * topk));
        k(FUSED_MOE, 3.5 + bytesUs((long) (expertBytes / 3)), TRITON_GEO, LaunchApi.CU_LAUNCH_KERNEL);
        k(MOE_SUM, small(2.6), elementwise(bs));
    }

    // ---- DeepSeek-V3 MLA (SGLang + FlashMLA + DeepGEMM fp8) ----

    private void buildV3() {
        int h = config.hiddenSize();
        section = Section.PROLOGUE;
        op(
                "aten::embedding",
                dims(d(config.vocabSize() / tp, h), d(bs), d(), d(), d()),
                types(BF16, LONG, SCALAR, SCALAR, SCALAR));
        k(EMBEDDING, small(2.3) + bytesUs((long) bs * h * 2), elementwise(bs * 4));
        op("flash_mla::get_mla_metadata", dims(d(bs), d(), d()), types(INT, SCALAR, SCALAR));
        k(MLA_METADATA, small(2.5), new Geometry(1, 1, 1, 32, 32, 0));
        boolean sparse = config.indexTopk() > 0;
        if (sparse) {
            op("deep_gemm::get_paged_mqa_logits_metadata", dims(d(bs), d(), d()), types(INT, SCALAR, SCALAR));
            k(MQA_METADATA, small(2.2), new Geometry(1, 1, 1, 32, 32, 0));
        }
        int heads = Math.max(1, config.numAttentionHeads() / tp);
        int kvLora = config.kvLoraRank();
        int rope = config.qkRopeHeadDim();
        int qLora = Math.max(1, config.qLoraRank());
        int nope = config.qkNopeHeadDim();
        int vDim = config.vHeadDim();
        for (int l = 0; l < layers; l++) {
            section = Section.LAYER;
            layer = l;
            norm(
                    l == 0 ? RMSNORM : FUSED_ADD_RMSNORM,
                    l == 0 ? "sgl_kernel::rmsnorm" : "sgl_kernel::fused_add_rmsnorm",
                    h);
            fp8Gemm(qLora + kvLora + rope, h);
            op("sgl_kernel::rmsnorm", dims(d(bs, qLora), d(qLora), d(), d()), types(BF16, BF16, SCALAR, SCALAR));
            k(RMSNORM, small(2.5), elementwise(bs));
            op("sgl_kernel::rmsnorm", dims(d(bs, kvLora), d(kvLora), d(), d()), types(BF16, BF16, SCALAR, SCALAR));
            k(RMSNORM, small(2.4), elementwise(bs));
            fp8Gemm((long) heads * (nope + rope), qLora);
            op("aten::bmm", dims(d(heads, bs, nope), d(heads, nope, kvLora)), types(BF16, BF16));
            k(GEMM_BMM, 3.0 + bytesUs((long) heads * nope * kvLora * 2), GEMM_GEO);
            op(
                    "sgl_kernel::apply_rope_pos_ids_cos_sin_cache",
                    dims(d(bs, heads, rope), d(bs, 1, rope), d(bs), d(163840, rope)),
                    types(BF16, BF16, LONG, FLOAT));
            k(ROPE_MLA, small(3.0), elementwise(bs * 2));
            op("sglang::set_mla_kv_buffer", dims(d(bs, 1, kvLora), d(bs, 1, rope), d(bs)), types(BF16, BF16, LONG));
            k(SET_MLA_KV, small(2.6), TRITON_GEO, LaunchApi.CU_LAUNCH_KERNEL);
            if (sparse) {
                indexer(h, config.indexTopk());
            }
            long tokens = sparse ? Math.min(ctx, config.indexTopk()) : ctx;
            long kvBytes = (long) bs * tokens * (kvLora + rope) * 2;
            op(
                    sparse ? "sgl_kernel::sparse_decode_fwd" : "flash_mla::flash_mla_with_kvcache",
                    dims(
                            d(bs, 1, heads, kvLora + rope),
                            d(bs * ctx / 64, 64, 1, kvLora + rope),
                            d(bs, ctx / 64),
                            d(bs)),
                    types(BF16, BF16, INT, INT));
            k(
                    sparse ? SPARSE_MLA_DECODE : MLA_DECODE,
                    6.0 + 2 * bytesUs(kvBytes),
                    new Geometry(Geometry.SMS, 1, 1, 256, 168, 230_400));
            k(
                    sparse ? SPARSE_MLA_COMBINE : MLA_COMBINE,
                    small(3.2),
                    new Geometry(bs, 1, heads / 64 + 1, 128, 64, 4_096),
                    true);
            op("aten::bmm", dims(d(heads, bs, kvLora), d(heads, kvLora, vDim)), types(BF16, BF16));
            k(GEMM_BMM, 3.0 + bytesUs((long) heads * kvLora * vDim * 2), GEMM_GEO);
            fp8Gemm(h, (long) heads * vDim);
            allReduce(h);
            norm(FUSED_ADD_RMSNORM, "sgl_kernel::fused_add_rmsnorm", h);
            if (config.isMoe(l)) {
                deepseekMoe(h, MOE_FUSED_GATE, "sgl_kernel::moe_fused_gate");
            } else {
                denseMlpFp8(h, config.intermediateSize());
            }
            allReduce(h);
        }
        section = Section.EPILOGUE;
        norm(FUSED_ADD_RMSNORM, "sgl_kernel::fused_add_rmsnorm", h);
        sampling(h, GEMM_LM_HEAD);
    }

    private void indexer(int h, int topk) {
        int idxHeads = config.indexNHeads();
        int idxDim = config.indexHeadDim();
        op("sgl_kernel::fast_hadamard_transform", dims(d(bs, idxHeads, idxDim), d()), types(BF16, SCALAR));
        k(HADAMARD, small(2.9), elementwise(bs * 2));
        quant((long) idxHeads * idxDim);
        op(
                "deep_gemm::fp8_paged_mqa_logits",
                dims(d(bs, 1, idxHeads, idxDim), d(bs * ctx / 64, 64, 1, idxDim + 4), d(bs, idxHeads), d(bs)),
                types(FP8, "\"unsigned char\"", FLOAT, INT));
        k(MQA_LOGITS, 4.0 + bytesUs((long) bs * ctx * (idxDim + 4)), GEMM_GEO, LaunchApi.CU_LAUNCH_KERNEL_EX);
        op("sgl_kernel::topk_transform_decode", dims(d(bs, ctx), d(bs, topk), d(bs)), types(FLOAT, INT, INT));
        k(TOPK_DECODE, small(4.2), elementwise(bs));
    }

    private void denseMlpFp8(int h, int inter) {
        long local = Math.max(1, inter / tp);
        fp8Gemm(2 * local, h);
        op("sgl_kernel::silu_and_mul", dims(d(bs, local), d(bs, 2 * local)), types(BF16, BF16));
        k(ACT_AND_MUL, small(2.8), elementwise(bs));
        fp8Gemm(h, local);
    }

    private void deepseekMoe(int h, String gateKernel, String gateOp) {
        int experts = config.routedExperts();
        int topk = config.expertsPerTok();
        long inter = Math.max(1, config.moeIntermediateSize() / tp);
        gemm(GEMM_ROUTER, experts, h, 2, false);
        op(gateOp, dims(d(bs, experts), d(experts), d(), d(), d()), types(FLOAT, FLOAT, SCALAR, SCALAR, SCALAR));
        k(gateKernel, small(3.3), elementwise(bs));
        if (config.sharedExperts() > 0) {
            long shared = inter * config.sharedExperts();
            fp8Gemm(2 * shared, h);
            op("sgl_kernel::silu_and_mul", dims(d(bs, shared), d(bs, 2 * shared)), types(BF16, BF16));
            k(ACT_AND_MUL, small(2.6), elementwise(bs));
            fp8Gemm(h, shared);
        }
        op(
                "sgl_kernel::moe_align_block_size",
                dims(d(bs, topk), d(), d(), d(), d(), d()),
                types(INT, SCALAR, SCALAR, INT, INT, INT));
        k(MOE_ALIGN, small(3.6), new Geometry(1, 1, 1, 1024, 32, 8_192));
        k(MOE_SORT, small(2.4), elementwise(4));
        double expertBytes = uniqueExperts(experts, topk) / tp * 3.0 * h * config.moeIntermediateSize();
        op(
                "sglang::inplace_fused_experts",
                dims(
                        d(bs, h),
                        d(experts / tp, 2L * config.moeIntermediateSize(), h),
                        d(experts / tp, h, config.moeIntermediateSize()),
                        d(bs, topk),
                        d(bs, topk)),
                types(BF16, FP8, FP8, FLOAT, INT));
        k(QUANT, small(2.4), elementwise(bs));
        k(FUSED_MOE, 5.0 + bytesUs((long) (expertBytes * 2 / 3)), TRITON_GEO, LaunchApi.CU_LAUNCH_KERNEL);
        k(ACT_AND_MUL, small(2.7), elementwise(bs * topk));
        k(QUANT, small(2.4), elementwise(bs));
        k(FUSED_MOE, 4.0 + bytesUs((long) (expertBytes / 3)), TRITON_GEO, LaunchApi.CU_LAUNCH_KERNEL);
        k(MOE_SUM, small(2.6), elementwise(bs));
        if (config.sharedExperts() > 0) {
            op("aten::add", dims(d(bs, h), d(bs, h), d()), types(BF16, BF16, SCALAR));
            k(ADD, small(2.1), elementwise(bs * 2));
        }
    }

    // ---- DeepSeek-V4 (vLLM: hyper-connections, CSA/HCA compressed attention, Marlin MoE) ----

    private void buildV4() {
        int h = config.hiddenSize();
        int hc = config.hcMult();
        section = Section.PROLOGUE;
        op(
                "aten::embedding",
                dims(d(config.vocabSize() / tp, h), d(bs), d(), d(), d()),
                types(BF16, LONG, SCALAR, SCALAR, SCALAR));
        k(EMBEDDING, small(2.3) + bytesUs((long) bs * h * 2), elementwise(bs * 4));
        op("aten::repeat", dims(d(bs, 1, h), d()), types(BF16, SCALAR));
        k(HC_EXPAND, small(2.1), TRITON_GEO, LaunchApi.CU_LAUNCH_KERNEL);
        op("deep_gemm::get_paged_mqa_logits_metadata", dims(d(bs), d(), d()), types(INT, SCALAR, SCALAR));
        k(MQA_METADATA, small(2.2), new Geometry(1, 1, 1, 32, 32, 0));
        int heads = Math.max(1, config.numAttentionHeads() / tp);
        int hd = config.headDim();
        int qLora = Math.max(1, config.qLoraRank());
        int rope = config.qkRopeHeadDim();
        for (int l = 0; l < layers; l++) {
            section = Section.LAYER;
            layer = l;
            int ratio = config.compressRatio(l);
            // attention block, closed by mhc_post
            mhcPre(h, hc);
            fp8Gemm(qLora + hd, h);
            op("_C::rms_norm", dims(d(bs, qLora), d(bs, qLora), d(qLora), d()), types(BF16, BF16, BF16, SCALAR));
            k(VLLM_RMSNORM, small(2.4), elementwise(bs));
            fp8Gemm((long) heads * hd, qLora);
            op(
                    "_C::fused_deepseek_v4_qnorm_rope_kv_rope_quant_insert",
                    dims(d(bs, heads, hd), d(bs, hd), d(bs), d(bs)),
                    types(BF16, BF16, LONG, LONG));
            k(V4_QNORM_ROPE, small(4.1), elementwise(bs * 4));
            if (ratio > 0) {
                String compressor = "void vllm::deepseek_v4::c" + ratio + "_compress_decode_kernel<c10::BFloat16, "
                        + ratio + ">(c10::BFloat16 const*, float const*, c10::BFloat16*, long const*, int, int)";
                op("_C::deepseek_v4_kv_compress", dims(d(bs, hd), d(ratio, hd), d(bs)), types(BF16, FLOAT, LONG));
                k(compressor, small(ratio == 4 ? 3.1 : 3.8), elementwise(bs));
            }
            if (ratio == 4) {
                indexer(h, config.indexTopk() > 0 ? config.indexTopk() : 512);
            }
            long tokens = ratio == 0
                    ? Math.min(ctx, config.slidingWindow())
                    : ratio == 4
                            ? Math.min(ctx / 4 + 1, Math.max(1, config.indexTopk())) + config.slidingWindow()
                            : ctx / ratio + 1 + config.slidingWindow();
            op(
                    "_flashmla_C::sparse_decode_fwd",
                    dims(d(bs, 1, heads, hd), d(bs * ctx / 64, 64, 1, hd + 8), d(bs, tokens), d(bs)),
                    types(BF16, "\"unsigned char\"", INT, INT));
            k(
                    SPARSE_MLA_DECODE,
                    5.0 + 2 * bytesUs((long) bs * tokens * (hd + 8)),
                    new Geometry(Geometry.SMS, 1, 1, 384, 168, 230_400));
            k(SPARSE_MLA_COMBINE, small(3.0), new Geometry(bs, 1, heads / 64 + 1, 256, 64, 4_096));
            op("vllm::fused_inv_rope_fp8_quant_kernel", dims(d(bs, heads, hd), d(bs)), types(BF16, LONG));
            k(INV_ROPE, small(3.2), TRITON_GEO, LaunchApi.CU_LAUNCH_KERNEL);
            int groups = config.oGroups();
            op("vllm::fp8_wo_a_group_major_quant", dims(d(bs, heads * hd), d(), d()), types(BF16, SCALAR, SCALAR));
            k(WO_A_QUANT, small(2.6), elementwise(bs));
            fp8Gemm((long) groups * 1024 / Math.max(1, Math.min(groups, tp)), (long) heads * hd / groups);
            fp8Gemm(h, (long) groups * 1024);
            allReduce(h);
            mhcPost(h, hc);
            // ffn block, closed by mhc_post
            mhcPre(h, hc);
            boolean hash = l < config.numHashLayers();
            int experts = config.routedExperts();
            int topk = config.expertsPerTok();
            if (hash) {
                op("_moe_C::hash_topk_route", dims(d(bs), d(config.vocabSize(), topk)), types(LONG, INT));
                k(HASH_ROUTE, small(2.5), elementwise(bs));
            } else {
                gemm(GEMM_ROUTER, experts, h, 2, false);
                op(
                        "_moe_C::topk_softplus_sqrt",
                        dims(d(bs, experts), d(experts), d(), d()),
                        types(FLOAT, FLOAT, SCALAR, SCALAR));
                k(TOPK_SOFTPLUS, small(3.1), elementwise(bs));
            }
            op(
                    "_moe_C::moe_align_block_size",
                    dims(d(bs, topk), d(), d(), d(), d(), d()),
                    types(INT, SCALAR, SCALAR, INT, INT, INT));
            k(MOE_ALIGN, small(3.5), new Geometry(1, 1, 1, 1024, 32, 8_192));
            long inter = config.moeIntermediateSize();
            double expertBytes = uniqueExperts(experts, topk) / tp * 3.0 * h * inter * 0.5;
            op(
                    "_moe_C::moe_wna16_marlin_gemm",
                    dims(d(bs, h), d(experts / tp, h / 16, 2 * inter * 2), d(bs, topk)),
                    types(BF16, INT, INT));
            k(
                    MARLIN_MOE,
                    5.0 + bytesUs((long) (expertBytes * 2 / 3)),
                    new Geometry(Geometry.SMS, 1, 1, 256, 128, 197_632));
            op("_C::silu_and_mul", dims(d(bs * topk, inter), d(bs * topk, 2 * inter)), types(BF16, BF16));
            k(VLLM_ACT_AND_MUL, small(2.6), elementwise(bs * topk));
            op(
                    "_moe_C::moe_wna16_marlin_gemm",
                    dims(d(bs * topk, inter), d(experts / tp, inter / 16, h * 2), d(bs, topk)),
                    types(BF16, INT, INT));
            k(MARLIN_MOE, 4.0 + bytesUs((long) (expertBytes / 3)), new Geometry(Geometry.SMS, 1, 1, 256, 128, 197_632));
            if (config.sharedExperts() > 0) {
                long shared = Math.max(1, inter * config.sharedExperts() / tp);
                fp8Gemm(2 * shared, h);
                op("_C::silu_and_mul", dims(d(bs, shared), d(bs, 2 * shared)), types(BF16, BF16));
                k(VLLM_ACT_AND_MUL, small(2.5), elementwise(bs));
                fp8Gemm(h, shared);
            }
            op("vllm::moe_forward_shared", dims(d(bs, topk, h), d(bs, h)), types(BF16, BF16));
            k(MOE_SUM_V4, small(2.7), elementwise(bs));
            allReduce(h);
            mhcPost(h, hc);
        }
        section = Section.EPILOGUE;
        op("vllm::hc_head_fuse", dims(d(bs, hc, h), d(hc, h)), types(BF16, FLOAT));
        k(HC_HEAD, small(3.4), TRITON_GEO);
        op("_C::rms_norm", dims(d(bs, h), d(bs, h), d(h), d()), types(BF16, BF16, BF16, SCALAR));
        k(VLLM_RMSNORM, small(2.5), elementwise(bs));
        sampling(h, "nvjet_tss_256x128_64x4_1x2_h_bz_coopA_TNT");
    }

    private void mhcPre(int h, int hc) {
        op("vllm::mhc_pre", dims(d(bs, hc, h), d(hc * (hc + 2), hc * h), d(), d()), types(BF16, FLOAT, FLOAT, SCALAR));
        k(HC_PRENORM_GEMM, 3.0 + bytesUs((long) hc * (hc + 2) * hc * h * 4), GEMM_GEO, LaunchApi.CU_LAUNCH_KERNEL_EX);
        k(MHC_PRE, small(3.6) + bytesUs((long) bs * hc * h * 2), new Geometry(bs, 1, 1, 256, 64, 32_768));
    }

    private void mhcPost(int h, int hc) {
        op(
                "vllm::mhc_post_tilelang",
                dims(d(bs, h), d(bs, hc, h), d(bs, hc, 1), d(bs, hc, hc)),
                types(BF16, BF16, FLOAT, FLOAT));
        k(MHC_POST, small(3.3) + bytesUs((long) bs * hc * h * 4), new Geometry(bs, 1, 1, 256, 64, 16_384), true);
    }

    // ---- shared pieces ----

    private void norm(String kernel, String opName, int h) {
        op(opName, dims(d(bs, h), d(bs, h), d(h), d()), types(BF16, BF16, BF16, SCALAR));
        k(kernel, small(2.7) + bytesUs((long) bs * h * 6), elementwise(bs));
    }

    /** bf16 GEMM [bs, k] x [k, n] through cuBLAS; split-K GEMMs launch their reduce kernel in the same op. */
    private void gemm(String kernel, long n, long k, int bytesPerWeight, boolean splitK) {
        op("aten::mm", dims(d(bs, k), d(k, n)), types(BF16, BF16));
        k(kernel, 2.5 + bytesUs(n * k * bytesPerWeight + (long) bs * k * 2), GEMM_GEO);
        if (splitK) {
            k(SPLITK_REDUCE, small(2.1), elementwise(Math.max(1, (int) (n / 256))));
        }
    }

    /** Block-quantized fp8 GEMM: activation quant, then DeepGEMM. */
    private void fp8Gemm(long n, long k) {
        quant(k);
        String kernel = "void deep_gemm::sm90_fp8_gemm_1d2d_impl<(cute::UMMA::Major)0, 0u, " + n + "u, " + k
                + "u, 1u, 64u, 128u, 128u, 128u, 128u, 128u, 4u, 128u, 256u, 1u, true, 132u, (deep_gemm::GemmType)0,"
                + " deep_gemm::epilogue::transform::EpilogueIdentity>(float*, int*, unsigned int, unsigned int,"
                + " unsigned int, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, CUtensorMap_st)";
        op(
                "deep_gemm::fp8_gemm_nt",
                dims(d(bs, k), d(bs, k / 128 + 1), d(n, k), d(n / 128 + 1, k / 128 + 1)),
                types(FP8, FLOAT, FP8, FLOAT));
        k(kernel, 3.0 + bytesUs(n * k + (long) bs * k), GEMM_GEO, LaunchApi.CU_LAUNCH_KERNEL_EX);
    }

    private void quant(long k) {
        op(
                "sgl_kernel::sgl_per_token_group_quant_fp8",
                dims(d(bs, k), d(bs, k), d(bs, k / 128 + 1), d()),
                types(BF16, FP8, FLOAT, SCALAR));
        k(QUANT, small(2.3), elementwise(bs));
    }

    private void allReduce(int h) {
        if (tp <= 1) {
            return;
        }
        op("c10d::allreduce_", dims(d(bs, h), d(), d(), d()), types(BF16, SCALAR, SCALAR, SCALAR));
        double bytes = (double) bs * h * 2 * 2 * (tp - 1) / tp;
        kernels.add(new KernelSpec(
                NCCL_ALL_REDUCE,
                4.5 + bytes / NVLINK_BYTES_PER_US,
                Comm.ALL_REDUCE,
                LaunchApi.CU_LAUNCH_KERNEL_EX,
                takeOp(),
                section,
                layer,
                false,
                COMM_GEO));
    }

    private void sampling(int h, String lmHead) {
        long vocab = Math.max(1, config.vocabSize() / tp);
        gemm(lmHead, vocab, h, 2, false);
        if (tp > 1) {
            op("c10d::allgather_", dims(d(bs, vocab), d(bs, vocab * tp), d()), types(BF16, BF16, SCALAR));
            double bytes = (double) bs * vocab * 2 * (tp - 1);
            kernels.add(new KernelSpec(
                    NCCL_ALL_GATHER,
                    5.0 + bytes / NVLINK_BYTES_PER_US,
                    Comm.ALL_GATHER,
                    LaunchApi.CU_LAUNCH_KERNEL_EX,
                    takeOp(),
                    section,
                    layer,
                    false,
                    COMM_GEO));
        }
        op("aten::softmax", dims(d(bs, vocab * tp), d(), d()), types(FLOAT, SCALAR, SCALAR));
        k(SOFTMAX, 3.0 + bytesUs((long) bs * vocab * tp * 8), elementwise(bs));
        op(
                "sgl_kernel::top_k_top_p_sampling_from_probs",
                dims(d(bs, vocab * tp), d(bs), d(bs), d(bs)),
                types(FLOAT, INT, FLOAT, FLOAT));
        k(SAMPLING, small(9.5), new Geometry(bs, 1, 1, 1024, 64, 25_600));
    }

    private double uniqueExperts(int experts, int topk) {
        if (experts <= 0) {
            return 0;
        }
        return experts * (1 - Math.pow(1 - (double) topk / experts, bs));
    }

    private static double small(double us) {
        return us;
    }

    private static double bytesUs(long bytes) {
        return bytes / HBM_BYTES_PER_US;
    }

    private static Geometry elementwise(int blocks) {
        return new Geometry(Math.max(1, blocks), 1, 1, 256, 32, 0);
    }

    private void op(String name, String inputDims, String inputTypes) {
        pendingOp = new OpSpec(name, inputDims, inputTypes);
    }

    private OpSpec takeOp() {
        OpSpec op = pendingOp;
        pendingOp = null;
        return op;
    }

    private void k(String name, double meanUs, Geometry geometry) {
        k(name, meanUs, geometry, LaunchApi.CUDA_LAUNCH_KERNEL, false);
    }

    private void k(String name, double meanUs, Geometry geometry, boolean anchor) {
        k(name, meanUs, geometry, LaunchApi.CUDA_LAUNCH_KERNEL, anchor);
    }

    private void k(String name, double meanUs, Geometry geometry, LaunchApi api) {
        k(name, meanUs, geometry, api, false);
    }

    private void k(String name, double meanUs, Geometry geometry, LaunchApi api, boolean anchor) {
        if (kernels.isEmpty() && pendingOp == null) {
            throw new IllegalStateException("the first kernel needs a cpu_op");
        }
        kernels.add(new KernelSpec(name, meanUs, Comm.NONE, api, takeOp(), section, layer, anchor, geometry));
    }

    private static long[] d(long... sizes) {
        return sizes;
    }

    private static String dims(long[]... shapes) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < shapes.length; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append('[');
            for (int j = 0; j < shapes[i].length; j++) {
                if (j > 0) {
                    sb.append(", ");
                }
                sb.append(shapes[i][j]);
            }
            sb.append(']');
        }
        return sb.append(']').toString();
    }

    private static String types(String... types) {
        return "[" + String.join(", ", types) + "]";
    }
}
