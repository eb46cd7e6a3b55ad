// y += Σ c·(Q4_0 row segment) over up to four rows (sparse_rows.h), per kernel variant: the
// sparse accumulate of a 4-bit neuron-major ffn_down (4.5 bits per weight against Q8_0's 8.5).
// Element j < 16 of a block is (low nibble of qs[j]) - 8, element j + 16 the high nibble - 8,
// times d. Each element adds (c·d)·q of each row in turn in f32, as axpy_q8_0.cpp does.
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

void axpy_q4_0_scalar(const uint8_t* const* rows, const float* c, int n_rows, int64_t n_blocks, float* y) {
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        for (int r = 0; r < n_rows; ++r) {
            const auto& b = reinterpret_cast<const BlockQ4_0*>(rows[r])[i];
            const float d = c[r] * fp16_to_fp32(b.d);
            for (int j = 0; j < 16; ++j) {
                y[j] += d * static_cast<float>((b.qs[j] & 0xF) - 8);
                y[j + 16] += d * static_cast<float>((b.qs[j] >> 4) - 8);
            }
        }
    }
}

#if defined(__x86_64__)
// The 32 quants of a block, minus 8, as two vectors of 16 signed bytes (elements 0..15, 16..31).
__attribute__((target("avx2"))) inline void unpack_q4_0(const BlockQ4_0& b, __m128i& lo, __m128i& hi) {
    __m128i q;
    std::memcpy(&q, b.qs, 16);
    const __m128i mask = _mm_set1_epi8(0xF), eight = _mm_set1_epi8(8);
    lo = _mm_sub_epi8(_mm_and_si128(q, mask), eight);
    hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), mask), eight);
}

__attribute__((target("avx2,fma,f16c"))) void axpy_q4_0_avx2(const uint8_t* const* rows, const float* c, int n_rows,
                                                                int64_t n_blocks, float* y) {
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        __m256 acc[4] = {_mm256_loadu_ps(y), _mm256_loadu_ps(y + 8), _mm256_loadu_ps(y + 16), _mm256_loadu_ps(y + 24)};
        for (int r = 0; r < n_rows; ++r) {
            const auto& b = reinterpret_cast<const BlockQ4_0*>(rows[r])[i];
            const __m256 d = _mm256_set1_ps(c[r] * _cvtsh_ss(b.d));
            __m128i lo, hi;
            unpack_q4_0(b, lo, hi);
            const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
            for (int j = 0; j < 4; ++j) {
                acc[j] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[j])), acc[j]);
            }
        }
        for (int j = 0; j < 4; ++j) _mm256_storeu_ps(y + 8 * j, acc[j]);
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) void axpy_q4_0_avx512(const uint8_t* const* rows, const float* c,
                                                                                   int n_rows, int64_t n_blocks, float* y) {
    for (int64_t i = 0; i < n_blocks; ++i, y += 32) {
        __m512 lo = _mm512_loadu_ps(y), hi = _mm512_loadu_ps(y + 16);
        for (int r = 0; r < n_rows; ++r) {
            const auto& b = reinterpret_cast<const BlockQ4_0*>(rows[r])[i];
            const __m512 d = _mm512_set1_ps(c[r] * _cvtsh_ss(b.d));
            __m128i ql, qh;
            unpack_q4_0(b, ql, qh);
            lo = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(ql)), lo);
            hi = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(qh)), hi);
        }
        _mm512_storeu_ps(y, lo);
        _mm512_storeu_ps(y + 16, hi);
    }
}
#endif

}  // namespace

AxpyFn find_axpy_q4_0(KernelVariant v) {
    if (!kernel_variant_supported(v)) return nullptr;
    switch (v) {
        case KernelVariant::Dequant:
        case KernelVariant::Scalar: return axpy_q4_0_scalar;
#if defined(__x86_64__)
        case KernelVariant::Avx2: return axpy_q4_0_avx2;
        case KernelVariant::Avx512: return axpy_q4_0_avx512;
#endif
        default: return nullptr;
    }
}

}  // namespace strata::cpu
