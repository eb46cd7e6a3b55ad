// AVX2 dot products of Q4_K, Q5_K and Q6_K weights with Q8_K activations. Per super-block the
// weights are unpacked 32 at a time and met with up to 4 activation rows: maddubs gives quant ·
// x pairs, madd multiplies them by the sub-block scale, so each row's int32 lanes hold the
// exact scaled sum; the min (Q4_K/Q5_K) or +32 bias (Q6_K) term comes from Q8_K's bsums. Lanes
// are scaled by d·dx in float and summed at the end: the same integer arithmetic as
// qdot_scalar_k.cpp, with a different float summation order.
#include "kernels_cpu/qdot.h"

#include <type_traits>

#include "kernels_cpu/simd_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace strata::cpu {
namespace {

using x86::f16;
using x86::load256;

// iacc += Σ pairs (w·x) · scale, for one 32-element slice.
inline __m256i scaled_dot(__m256i iacc, __m256i w, const int8_t* x, __m256i scale16) {
    return _mm256_add_epi32(iacc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, load256(x)), scale16));
}

inline __m256i scale16(uint64_t scales, int s) {
    return _mm256_set1_epi16(static_cast<int16_t>((scales >> (8 * s)) & 0xFF));
}

// Q4_K and Q5_K share everything but the fifth bit (HasHigh: Q5_K's qh).
template <typename Block, bool HasHigh, int C>
void dot_cols_k4(const Block* w, const QDotActs& x, int64_t n_blocks, float* out) {
    const BlockQ8_K* xb[C];
    __m256 acc[C];
    for (int c = 0; c < C; ++c) {
        xb[c] = reinterpret_cast<const BlockQ8_K*>(x.row(c));
        acc[c] = _mm256_setzero_ps();
    }
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const Block& wb = w[b];
        x86::prefetch_ahead(&wb, 3);
        const x86::ScalesMinsK4 sm = x86::unpack_scales_mins_k4(wb.scales);
        __m256i qh = _mm256_setzero_si256();
        if constexpr (HasHigh) qh = load256(wb.qh);
        __m256i iacc[C];
        for (int c = 0; c < C; ++c)
            iacc[c] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {  // sub-blocks 2j (low nibbles) and 2j+1 (high nibbles)
            const __m256i q = load256(wb.qs + 32 * j);
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if constexpr (HasHigh) {  // bit s of qh[l] is the fifth bit of element 32s + l
                const __m256i one = _mm256_set1_epi8(1);
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(qh, one), 4));
                qh = _mm256_srli_epi16(qh, 1);
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(qh, one), 4));
                qh = _mm256_srli_epi16(qh, 1);
            }
            const __m256i s_lo = scale16(sm.sc, 2 * j), s_hi = scale16(sm.sc, 2 * j + 1);
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) {
                const int8_t* xq = xb[c][b].qs + 64 * j;
                iacc[c] = scaled_dot(iacc[c], lo, xq, s_lo);
                iacc[c] = scaled_dot(iacc[c], hi, xq + 32, s_hi);
            }
        }
        // acc += dx · (d·isum − dmin·imin), lane by lane.
        const __m256 d = _mm256_set1_ps(f16(wb.d)), dmin = _mm256_set1_ps(f16(wb.dmin));
        const __m256i mins = x86::duplicate_mins16(sm.m);
        for (int c = 0; c < C; ++c) {
            const BlockQ8_K& xc = xb[c][b];
            const __m256i imin = _mm256_madd_epi16(load256(xc.bsums), mins);
            __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(iacc[c]), d);
            t = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(imin), dmin, t);
            acc[c] = _mm256_fmadd_ps(t, _mm256_set1_ps(xc.d), acc[c]);
        }
    }
    for (int c = 0; c < C; ++c)
        out[c] = x86::hsum(acc[c]);
}

template <int C>
void dot_cols_q6_k(const BlockQ6_K* w, const QDotActs& x, int64_t n_blocks, float* out) {
    const BlockQ8_K* xb[C];
    __m256 acc[C];
    for (int c = 0; c < C; ++c) {
        xb[c] = reinterpret_cast<const BlockQ8_K*>(x.row(c));
        acc[c] = _mm256_setzero_ps();
    }
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const BlockQ6_K& wb = w[b];
        x86::prefetch_ahead(&wb, 4);
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
        __m256i iacc[C];
        for (int c = 0; c < C; ++c)
            iacc[c] = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {  // elements 128h + 32k + l, k = 0..3
            const __m256i a = load256(wb.ql + 64 * h), bq = load256(wb.ql + 64 * h + 32);
            const __m256i qh = load256(wb.qh + 32 * h);
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(a, low4),
                                _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45)),
                _mm256_or_si256(_mm256_and_si256(bq, low4),
                                _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low4),
                                _mm256_and_si256(qh, bits45)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bq, 4), low4),
                                _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45)),
            };
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                // Slice i = 4h + k holds sub-blocks 2i (lanes 0-15) and 2i+1 (lanes 16-31).
                const int i = 4 * h + k;
                const __m128i pick =
                    _mm_unpacklo_epi64(_mm_set1_epi8(static_cast<char>(2 * i)),
                                       _mm_set1_epi8(static_cast<char>(2 * i + 1)));
                const __m256i s = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, pick));
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c)
                    iacc[c] = scaled_dot(iacc[c], q[k], xb[c][b].qs + 32 * i, s);
            }
        }
        const __m256 d = _mm256_set1_ps(f16(wb.d));
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        for (int c = 0; c < C; ++c) {  // acc += dx · d·(isum − 32·Σ sc·bsum)
            const BlockQ8_K& xc = xb[c][b];
            const __m256i bias = _mm256_madd_epi16(load256(xc.bsums), sc16);
            const __m256i isum = _mm256_sub_epi32(iacc[c], _mm256_slli_epi32(bias, 5));
            acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(isum), d),
                                     _mm256_set1_ps(xc.d), acc[c]);
        }
    }
    for (int c = 0; c < C; ++c)
        out[c] = x86::hsum(acc[c]);
}

template <typename Block, int C>
void dot_cols(const Block* w, const QDotActs& x, int64_t n_blocks, float* out) {
    if constexpr (std::is_same_v<Block, BlockQ6_K>)
        dot_cols_q6_k<C>(w, x, n_blocks, out);
    else
        dot_cols_k4<Block, std::is_same_v<Block, BlockQ5_K>, C>(w, x, n_blocks, out);
}

// Groups of up to 4 rows: every accumulator stays in one of the 16 ymm registers.
template <typename Block>
void dot_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    const auto* wb = static_cast<const Block*>(w);
    for (int c = 0; c < n_cols; c += 4) {
        const QDotActs xc = x.from_row(c);
        switch (n_cols - c) {
            case 1: dot_cols<Block, 1>(wb, xc, n_blocks, out + c); break;
            case 2: dot_cols<Block, 2>(wb, xc, n_blocks, out + c); break;
            case 3: dot_cols<Block, 3>(wb, xc, n_blocks, out + c); break;
            default: dot_cols<Block, 4>(wb, xc, n_blocks, out + c); break;
        }
    }
}

}  // namespace

QDotFn qdot_avx2_k(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_K: return dot_rows<BlockQ4_K>;
        case GgmlType::Q5_K: return dot_rows<BlockQ5_K>;
        case GgmlType::Q6_K: return dot_rows<BlockQ6_K>;
        default: return nullptr;
    }
}

}  // namespace strata::cpu

#pragma GCC pop_options
