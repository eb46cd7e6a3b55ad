// Internal to kernels_cpu: the AVX-512 (F/BW/VL + AVX2/FMA/F16C) twin of simd_f32_avx2.h, with the
// same member names, 16 floats per vector. Include only from the AVX-512 files
// (row_ops_avx512.cpp, qdot_avx512_*.cpp) after their `#pragma GCC target`. Uses no AVX-512 DQ,
// which the Avx512 variant does not require.
#pragma once

#include "kernels_cpu/simd_x86.h"

namespace strata::cpu {
// Anonymous on purpose: see simd_f32_avx2.h.
namespace {

struct SimdAvx512 {
    using V = __m512;
    using D = __m512d;
    static constexpr int W = 16;

    static V zero() { return _mm512_setzero_ps(); }
    static V set1(float x) { return _mm512_set1_ps(x); }
    static V load(const float* p) { return _mm512_loadu_ps(p); }
    static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
    static V add(V a, V b) { return _mm512_add_ps(a, b); }
    static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
    static V div(V a, V b) { return _mm512_div_ps(a, b); }
    static V max(V a, V b) { return _mm512_max_ps(a, b); }
    static V min(V a, V b) { return _mm512_min_ps(a, b); }
    static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
    static V fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
    static V fmaddsub(V a, V b, V c) { return _mm512_fmaddsub_ps(a, b, c); }
    static V swap_pairs(V v) { return _mm512_permute_ps(v, 0xB1); }
    static V load_dup_pairs(const float* p) {
        const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        return _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(_mm256_loadu_ps(p)));
    }
    static V abs(V v) { return _mm512_abs_ps(v); }
    static V sign_bits(V v) {
        return _mm512_castsi512_ps(
            _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)));
    }
    static V bit_xor(V a, V b) {
        return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
    }
    static V round(V v) {
        return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    static V pow2i(V n) {
        const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
        return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
    }
    static V select_lt(V a, V b, V x, V y) {
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
    }
    // Fixed order: 256-bit halves added, then SimdAvx2's 8-lane sum.
    static float hsum(V v) {
        const __m256 lo = _mm512_castps512_ps256(v);
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
        return x86::hsum(_mm256_add_ps(lo, hi));
    }
    static float hmax(V v) { return _mm512_reduce_max_ps(v); }

    static V load_f16(const uint16_t* p) {
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static void store_f16(uint16_t* p, V v) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    static V load_i8(const int8_t* p) {
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
    }
    static V load_q4(const uint8_t* p, bool hi) {
        __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        if (hi) b = _mm_srli_epi16(b, 4);
        b = _mm_and_si128(b, _mm_set1_epi8(0x0F));
        const __m512i i = _mm512_sub_epi32(_mm512_cvtepu8_epi32(b), _mm512_set1_epi32(8));
        return _mm512_cvtepi32_ps(i);
    }

    // The W bytes at p as two vectors of their 4-bit halves (0..15): lo the low nibbles, hi the high.
    static void load_u4_pair(const uint8_t* p, V& lo, V& hi) {
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
        lo = _mm512_cvtepi32_ps(_mm512_and_si512(b, _mm512_set1_epi32(0x0F)));
        hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4));
    }

    static D zero_d() { return _mm512_setzero_pd(); }
    static void add_squares(D& lo, D& hi, V x) {
        const D a = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
        const D b = _mm512_cvtps_pd(
            _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
        lo = _mm512_fmadd_pd(a, a, lo);
        hi = _mm512_fmadd_pd(b, b, hi);
    }
    static double hsum_d(D v) {
        const __m256d s = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
        __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
        return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
    }
    static D add_d(D a, D b) { return _mm512_add_pd(a, b); }

    static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
};

}  // namespace
}  // namespace strata::cpu
