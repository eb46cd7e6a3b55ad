// AVX2 twins of quant/'s reference Q8_0 and Q8_K quantizers for the activation rows of a
// matmul: bit-identical to quantize_q8_0 / quantize_q8_k for every finite input (the same float
// operations: one multiply per element, round-half-even or half-away, clamp), tested against
// them. The reference is scalar and took a quarter of a prefill's time.
#include "kernels_cpu/quantize_act.h"

#include "kernels_cpu/cpu_features.h"

#include <cmath>
#include <cstring>

#include "kernels_cpu/simd_x86.h"
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/reference.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace strata::cpu {
namespace {

inline __m256 abs_ps(__m256 v) {
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
}

// max |x| over n (a multiple of 8) floats; NaN lanes are skipped as std::fmax skips them.
inline float absmax(const float* x, int n) {
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8)
        m = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x + i)), m);  // NaN first: keeps m
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// The first x[i] with |x[i]| == amax (the reference's signed max); 0 if none.
inline float first_with_abs(const float* x, int n, float amax) {
    const __m256 target = _mm256_set1_ps(amax);
    for (int i = 0; i < n; i += 8) {
        const int mask =
            _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + i)), target, _CMP_EQ_OQ));
        if (mask != 0) return x[i + __builtin_ctz(static_cast<unsigned>(mask))];
    }
    return 0.0f;
}

// 8 int32 -> clamp to [-127, 127] as the reference's fmin(fmax(v, lo), hi) (NaN gives -127).
inline __m256i clamp_to_i32(__m256 r) {
    r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    return _mm256_cvttps_epi32(r);
}

// Packs 32 int32 (4 vectors, element order) into 32 int8 at dst.
inline void store_i8x32(int8_t* dst, __m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);  // lanes: a0-3 b0-3 | a4-7 b4-7
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permutevar8x32_epi32(abcd, order));
}

inline int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// std::round (half away from zero) of integral-or-not floats: trunc, then one step away from
// zero where the exact remainder is at least 1/2.
inline __m256 round_half_away(__m256 v) {
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 frac = abs_ps(_mm256_sub_ps(v, t));
    const __m256 step = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ),
                                      _mm256_or_ps(_mm256_set1_ps(1.0f),
                                                   _mm256_and_ps(v, _mm256_set1_ps(-0.0f))));
    return _mm256_add_ps(t, step);
}

void quantize_q8_0_avx2(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q8_0", n, kQk32);
    auto* blocks = static_cast<BlockQ8_0*>(dst);
    for (int64_t b = 0; b < n / kQk32; ++b, src += kQk32) {
        const float d = absmax(src, kQk32) / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        if (!std::isfinite(id)) id = 0.0f;
        const __m256 idv = _mm256_set1_ps(id);
        __m256i q[4];
        for (int i = 0; i < 4; ++i)
            q[i] = clamp_to_i32(round_half_away(_mm256_mul_ps(_mm256_loadu_ps(src + 8 * i), idv)));
        store_i8x32(blocks[b].qs, q[0], q[1], q[2], q[3]);
        blocks[b].d = fp32_to_fp16(d);
    }
}

void quantize_q8_k_avx2(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q8_K", n, kQkK);
    auto* blocks = static_cast<BlockQ8_K*>(dst);
    for (int64_t b = 0; b < n / kQkK; ++b, src += kQkK) {
        BlockQ8_K& blk = blocks[b];
        const float amax = absmax(src, kQkK);
        const float max = amax != 0.0f ? first_with_abs(src, kQkK, amax) : 0.0f;
        float iscale = amax != 0.0f ? -127.0f / max : 0.0f;
        if (!std::isfinite(iscale)) iscale = 0.0f;
        const __m256 is = _mm256_set1_ps(iscale);
        for (int g = 0; g < kQkK / 32; ++g) {  // 32 elements = two bsums
            __m256i q[4];
            for (int i = 0; i < 4; ++i) {
                const __m256 v = _mm256_mul_ps(is, _mm256_loadu_ps(src + 32 * g + 8 * i));
                q[i] =
                    clamp_to_i32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            }
            store_i8x32(blk.qs + 32 * g, q[0], q[1], q[2], q[3]);
            blk.bsums[2 * g] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
            blk.bsums[2 * g + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
        }
        blk.d = iscale != 0.0f ? 1.0f / iscale : 0.0f;
    }
}

}  // namespace

QuantizeFn fast_act_quantizer(GgmlType act_type) {
    const CpuFeatures& f = cpu_features();
    if (!f.avx2 || !f.fma || !f.f16c) return nullptr;
    switch (act_type) {
        case GgmlType::Q8_0: return quantize_q8_0_avx2;
        case GgmlType::Q8_K: return quantize_q8_k_avx2;
        default: return nullptr;
    }
}

}  // namespace strata::cpu

#pragma GCC pop_options
