// Internal to kernels_cpu: the AVX2 (+FMA, F16C) f32 vector type the row-op and attention
// templates (row_ops_simd.h, attention_simd.h) are written against; simd_f32_avx512.h is its
// twin with the same member names. Include only from a file compiled for those features
// (row_ops_avx2.cpp) after its `#pragma GCC target`.
#pragma once

#include "kernels_cpu/simd_x86.h"

namespace strata::cpu {
// Anonymous on purpose: every function here is compiled for one instruction set, so the
// linker must never merge it with a same-named one from a file built for another.
namespace {

struct SimdAvx2 {
    using V = __m256;
    using D = __m256d;
    static constexpr int W = 8;  // floats per V

    static V zero() { return _mm256_setzero_ps(); }
    static V set1(float x) { return _mm256_set1_ps(x); }
    static V load(const float* p) { return _mm256_loadu_ps(p); }
    static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
    static V add(V a, V b) { return _mm256_add_ps(a, b); }
    static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
    static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
    static V div(V a, V b) { return _mm256_div_ps(a, b); }
    static V max(V a, V b) { return _mm256_max_ps(a, b); }
    static V min(V a, V b) { return _mm256_min_ps(a, b); }
    static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }    // a·b + c
    static V fnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }  // c − a·b
    // Even lanes a·b − c, odd lanes a·b + c.
    static V fmaddsub(V a, V b, V c) { return _mm256_fmaddsub_ps(a, b, c); }
    static V swap_pairs(V v) { return _mm256_permute_ps(v, 0xB1); }
    // W/2 floats from p, each twice: [p0, p0, p1, p1, ...].
    static V load_dup_pairs(const float* p) {
        return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)),
                                        _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    }
    static V abs(V v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
    static V sign_bits(V v) { return _mm256_and_ps(_mm256_set1_ps(-0.0f), v); }
    static V bit_xor(V a, V b) { return _mm256_xor_ps(a, b); }
    static V round(V v) { return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
    // 2^n for integral n in [-126, 127].
    static V pow2i(V n) {
        const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
        return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
    }
    // a < b ? x : y, per lane.
    static V select_lt(V a, V b, V x, V y) {
        return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
    }
    static float hsum(V v) { return x86::hsum(v); }
    static float hmax(V v) {
        __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        s = _mm_max_ps(s, _mm_movehl_ps(s, s));
        s = _mm_max_ss(s, _mm_movehdup_ps(s));
        return _mm_cvtss_f32(s);
    }

    static V load_f16(const uint16_t* p) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    // Round to nearest even, as quant/half.h's fp32_to_fp16 (NaN payloads aside).
    static void store_f16(uint16_t* p, V v) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    static V load_i8(const int8_t* p) {
        const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
        return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    }
    // W 4-bit values of a Q4_0 block's qs from byte p (high nibbles when hi), minus 8.
    static V load_q4(const uint8_t* p, bool hi) {
        __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
        if (hi) b = _mm_srli_epi16(b, 4);
        b = _mm_and_si128(b, _mm_set1_epi8(0x0F));
        const __m256i i = _mm256_sub_epi32(_mm256_cvtepu8_epi32(b), _mm256_set1_epi32(8));
        return _mm256_cvtepi32_ps(i);
    }

    // The W bytes at p as two vectors of their 4-bit halves (0..15): lo the low nibbles, hi the high.
    static void load_u4_pair(const uint8_t* p, V& lo, V& hi) {
        const __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
        lo = _mm256_cvtepi32_ps(_mm256_and_si256(b, _mm256_set1_epi32(0x0F)));
        hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));
    }

    static D zero_d() { return _mm256_setzero_pd(); }
    // lo += x[0..W/2)², hi += x[W/2..W)², in double.
    static void add_squares(D& lo, D& hi, V x) {
        const D a = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
        const D b = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
        lo = _mm256_fmadd_pd(a, a, lo);
        hi = _mm256_fmadd_pd(b, b, hi);
    }
    static double hsum_d(D v) {
        __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
        return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
    }
    static D add_d(D a, D b) { return _mm256_add_pd(a, b); }

    static void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }
};

}  // namespace
}  // namespace strata::cpu
