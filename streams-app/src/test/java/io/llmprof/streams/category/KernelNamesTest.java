package io.llmprof.streams.category;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class KernelNamesTest {
    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "void rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, int) | rotary_embedding_kernel<c10::BFloat16, true>",
                "void (anonymous namespace)::store_kvcache<2048l, 4, false, long>((anonymous namespace)::StoreKVCacheParams) | (anonymous namespace)::store_kvcache<2048l, 4, false, long>",
                "void at::native::vectorized_elementwise_kernel<4, at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}, std::array<char*, 2ul> >(int, at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}, std::array<char*, 2ul>) | at::native::vectorized_elementwise_kernel<4, at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}, std::array<char*, 2ul> >",
                "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib | _ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
                "kernel_unified_attention_2d | kernel_unified_attention_2d",
                "void foo<0x7f3a2b>(float*) at 0xdeadbeef | foo<0xADDR>(float*) at 0xADDR",
                "void foo<0x7f3a2b>(int*) | foo<0xADDR>",
                "Memcpy DtoD (Device -> Device) | Memcpy DtoD",
                "f() | f",
                "g(int, (h)) | g",
                "()| ()",
            })
    void canonicalNameStripsVoidArgumentsAndAddresses(String raw, String canonical) {
        assertThat(KernelNames.canonical(raw)).isEqualTo(canonical.strip());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "a.b<int*>(x) | ^a\\.b<int\\*>\\(x\\)$",
                "Cijk_Alik_MT64x32 | ^Cijk_Alik_MT64x32$",
            })
    void exactRegexMatchesOnlyThatName(String name, String regex) {
        assertThat(KernelNames.exactRegex(name)).isEqualTo(regex);
        assertThat(java.util.regex.Pattern.compile(regex).matcher(name).matches())
                .isTrue();
        assertThat(java.util.regex.Pattern.compile(regex).matcher(name + "x").find())
                .isFalse();
    }
}
