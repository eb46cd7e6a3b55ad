// y += c · a Q8_0 row segment (sparse_rows.h), per kernel variant: the sparse accumulate of
// ffn_down's neuron-major rows. Each element is y + (c·d)·q in f32 (one FMA on the SIMD paths,
// a multiply and an add in the scalar one), so variants differ by at most one rounding.
#include <cstring>

#include "kernels_cpu/sparse_rows.h"
#include "quant/blocks.h"
#include "quant/half.h"

#if defined(__x86_64__)
// As in simd_x86.h: GCC 12's AVX-512 headers warn inside themselves at every inlined use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace strata::cpu {
namespace {

void axpy_q8_0_scalar(const void* blocks, int64_t n_blocks, float c, float* y) {
    const auto* b = static_cast<const BlockQ8_0*>(blocks);
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        const float d = c * fp16_to_fp32(b[i].d);
        for (int j = 0; j < 32; ++j) y[j] += d * static_cast<float>(b[i].qs[j]);
    }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma,f16c"))) void axpy_q8_0_avx2(const void* blocks, int64_t n_blocks, float c,
                                                                float* y) {
    const auto* b = static_cast<const BlockQ8_0*>(blocks);
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        const __m256 d = _mm256_set1_ps(c * _cvtsh_ss(b[i].d));
        for (int j = 0; j < 32; j += 8) {
            __m128i q8;
            std::memcpy(&q8, b[i].qs + j, 8);  // the low 8 bytes
            const __m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8));
            _mm256_storeu_ps(y + j, _mm256_fmadd_ps(d, q, _mm256_loadu_ps(y + j)));
        }
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) void axpy_q8_0_avx512(const void* blocks, int64_t n_blocks,
                                                                                   float c, float* y) {
    const auto* b = static_cast<const BlockQ8_0*>(blocks);
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        const __m512 d = _mm512_set1_ps(c * _cvtsh_ss(b[i].d));
        const __m256i q8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[i].qs));
        const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q8)));
        const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q8, 1)));
        _mm512_storeu_ps(y, _mm512_fmadd_ps(d, lo, _mm512_loadu_ps(y)));
        _mm512_storeu_ps(y + 16, _mm512_fmadd_ps(d, hi, _mm512_loadu_ps(y + 16)));
    }
}
#endif

}  // namespace

AxpyQ8Fn find_axpy_q8_0(KernelVariant v) {
    if (!kernel_variant_supported(v)) return nullptr;
    switch (v) {
        case KernelVariant::Dequant:
        case KernelVariant::Scalar: return axpy_q8_0_scalar;
#if defined(__x86_64__)
        case KernelVariant::Avx2: return axpy_q8_0_avx2;
        case KernelVariant::Avx512: return axpy_q8_0_avx512;
#endif
        default: return nullptr;
    }
}

}  // namespace strata::cpu
