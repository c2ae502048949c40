package io.llmprof.streams.category;

import static org.assertj.core.api.Assertions.assertThat;

import io.llmprof.streams.profile.ProfileCatalog;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Identities and family labels keep the kind of a kernel's template arguments, so one launcher template (cutlass
 * {@code device_kernel}, ck_tile {@code kentry}) never stands for different kernels, while numbers, flags and
 * built-in types are left out (the label stays short). Names: FlashAttention 3 and torch grouped-GEMM kernels as
 * ptxas / nsys print them, and the real MI300X traces of ../shared/data/tracelens.
 */
class KernelLabelsTest {
    private static final DisplayNames NAMES = ProfileCatalog.builtIn().displayNames();

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                // FlashAttention 3 backward and a grouped GEMM through the same launcher template
                "cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnBwdSm90<flash::CollectiveMainloopBwdSm90"
                        + "<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, float>, 128> > >"
                        + " | cutlass::device_kernel<FlashAttnBwdSm90> | device_kernel<FlashAttnBwdSm90>",
                "cutlass::device_kernel<at::cuda::detail::enable_3x_kernel_for_sm9x<cutlass::gemm::kernel::GemmUniversal"
                        + "<cutlass::gemm::GroupProblemShape<cute::tuple<int, int, int> >, float> > >"
                        + " | cutlass::device_kernel<GemmUniversal> | device_kernel<GemmUniversal>",
                "cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2, cute::tuple<cute::C<1> >,"
                        + " cutlass::bfloat16_t, float, cutlass::arch::Sm90, false>, flash::CollectiveEpilogueBwd<256>,"
                        + " flash::SingleTileSchedulerBwd> >"
                        + " | cutlass::device_kernel<FlashAttnBwd> | device_kernel<FlashAttnBwd>",
                // ck_tile's launcher, Itanium-mangled (hipcc): attention and rmsnorm stay apart
                "_ZN7ck_tile6kentryILi2ENS_38FmhaBatchPrefillWithPagedKVCacheKernelINS_40BlockFmhaBatchPrefillPipeline"
                        + "QRKSVSAsyncINS_28BlockAttentionQuantScaleEnumE0EEEEEEvv"
                        + " | ck_tile::kentry<FmhaBatchPrefillWithPagedKVCacheKernel>"
                        + " | kentry<FmhaBatchPrefillWithPagedKVCacheKernel>",
                "_ZN7ck_tile6kentryILi1ENS_12Rmsnorm2dFwdINS_27Rmsnorm2dFwdPipelineOnePassINS_27Rmsnorm2dFwdPipeline"
                        + "ProblemIDF16bDF16bfDF16bDF16bDF16bffEEEEEEEvDpT1_"
                        + " | ck_tile::kentry<Rmsnorm2dFwd> | kentry<Rmsnorm2dFwd>",
                // a lambda argument: the function holding it
                "at::native::elementwise_kernel_manual_unroll<128, 8, at::native::gpu_kernel_impl_nocast<at::native"
                        + "::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda"
                        + "(c10::BFloat16)#1}> >"
                        + " | at::native::elementwise_kernel_manual_unroll<direct_copy_kernel_cuda>"
                        + " | elementwise_kernel_manual_unroll<direct_copy_kernel_cuda>",
                "at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 2ul>"
                        + " > | at::native::vectorized_elementwise_kernel<CUDAFunctor_add>"
                        + " | vectorized_elementwise_kernel<CUDAFunctor_add>",
                // a lambda in an anonymous namespace; ATen's array helper is no kind
                "at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar("
                        + "at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()"
                        + "#1}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >"
                        + " | at::native::vectorized_elementwise_kernel<launch_clamp_scalar>"
                        + " | vectorized_elementwise_kernel<launch_clamp_scalar>",
                // a lambda nested in another template's arguments is that template's business
                "at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::"
                        + "native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)"
                        + "#1}>, unsigned int, float, 4> > | at::native::reduce_kernel<ReduceOp> | reduce_kernel<ReduceOp>",
                // numbers, flags, casts and built-in types are no kinds: the display name stays
                "(anonymous namespace)::store_kvcache<2048l, 4, false, long> | (anonymous namespace)::store_kvcache"
                        + " | store_kvcache<…>",
                "paged_attention_ll4mi_reduce_kernel<__hip_bfloat16, __hip_bfloat16, 128, 128, 256, 3, false>"
                        + " | paged_attention_ll4mi_reduce_kernel | paged_attention_ll4mi_reduce_kernel<…>",
                "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib"
                        + " | aiter::add_rmsnorm_quant_kernel | add_rmsnorm_quant_kernel",
                "kernel_unified_attention_3d | kernel_unified_attention_3d | kernel_unified_attention_3d",
            })
    void identityAndFamilyLabelKeepTheKindsOfTemplateArguments(String canonical, String identity, String label) {
        assertThat(KernelLabels.identity(canonical)).isEqualTo(identity);
        assertThat(KernelLabels.familyLabel(NAMES.simplify(canonical), canonical))
                .isEqualTo(label);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                // not understood: no kinds rather than wrong ones, never an exception
                "_ZN3foo3barI | foo::bar",
                "_Z | _Z",
                "a<b<c> | a<b>",
                "f<> | f",
                "<> | ''",
            })
    void oddNamesGiveNoKinds(String canonical, String identity) {
        assertThat(KernelLabels.identity(canonical)).isEqualTo(identity);
    }
}
