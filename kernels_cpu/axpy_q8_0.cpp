// y += Σ c·(Q8_0 row segment) over up to four rows (sparse_rows.h), per kernel variant: the
// sparse accumulate of ffn_down's neuron-major rows. Each element adds (c·d)·q of each row in
// turn in f32 (one FMA on the SIMD paths, a multiply and an add in the scalar one), so variants
// differ by one rounding per row at most.
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

// Rows are added one after another for each element, in the same order on every variant.
void axpy_q8_0_scalar(const uint8_t* const* rows, const float* c, int n_rows, int64_t n_blocks, float* y) {
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        for (int r = 0; r < n_rows; ++r) {
            const auto& b = reinterpret_cast<const BlockQ8_0*>(rows[r])[i];
            const float d = c[r] * fp16_to_fp32(b.d);
            for (int j = 0; j < 32; ++j) y[j] += d * static_cast<float>(b.qs[j]);
        }
    }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma,f16c"))) void axpy_q8_0_avx2(const uint8_t* const* rows, const float* c, int n_rows,
                                                                int64_t n_blocks, float* y) {
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        __m256 acc[4] = {_mm256_loadu_ps(y), _mm256_loadu_ps(y + 8), _mm256_loadu_ps(y + 16), _mm256_loadu_ps(y + 24)};
        for (int r = 0; r < n_rows; ++r) {
            const auto& b = reinterpret_cast<const BlockQ8_0*>(rows[r])[i];
            const __m256 d = _mm256_set1_ps(c[r] * _cvtsh_ss(b.d));
            for (int j = 0; j < 4; ++j) {
                __m128i q8;
                std::memcpy(&q8, b.qs + 8 * j, 8);  // the low 8 bytes
                acc[j] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), acc[j]);
            }
        }
        for (int j = 0; j < 4; ++j) _mm256_storeu_ps(y + 8 * j, acc[j]);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) void axpy_q8_0_avx512(const uint8_t* const* rows, const float* c,
                                                                                   int n_rows, int64_t n_blocks, float* y) {
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        __m512 lo = _mm512_loadu_ps(y), hi = _mm512_loadu_ps(y + 16);
        for (int r = 0; r < n_rows; ++r) {
            const auto& b = reinterpret_cast<const BlockQ8_0*>(rows[r])[i];
            const __m512 d = _mm512_set1_ps(c[r] * _cvtsh_ss(b.d));
            const __m256i q8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
            lo = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q8))), lo);
            hi = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q8, 1))), hi);
        }
        _mm512_storeu_ps(y, lo);
        _mm512_storeu_ps(y + 16, hi);
    }
}
#endif

}  // namespace

AxpyFn find_axpy_q8_0(KernelVariant v) {
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
