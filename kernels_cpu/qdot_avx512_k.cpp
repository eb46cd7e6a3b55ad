// AVX-512 (BW + VNNI) dot products of Q4_K, Q5_K and Q6_K weights with Q8_K activations. A
// super-block is unpacked 64 weights at a time, in the activations' element order, and met with
// up to 8 activation rows: maddubs gives quant · x pairs, vpdpwssd multiplies them by the
// sub-block scale and accumulates, so each row's int32 lanes hold the exact scaled sum; mins
// (Q4_K/Q5_K) and the +32 bias (Q6_K) come from Q8_K's bsums. Lanes are scaled by d·dx in float
// and summed at the end: qdot_scalar_k.cpp's integer arithmetic, another float summation order.
#include "kernels_cpu/qdot.h"

#if defined(__x86_64__)
#include <type_traits>

#include "kernels_cpu/simd_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

namespace strata::cpu {
namespace {

using x86::f16;

// Lane t of 32 int16 lanes holds t / 8: picks a 16-element sub-block's scale per lane.
alignas(64) constexpr int16_t kLaneOver8[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                                2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};

inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

inline __m512i concat(__m256i lo, __m256i hi) {
    return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
}

inline __m512 to_float(__m512i v) {
    return _mm512_cvtepi32_ps(v);
}

// Sum of the 16 lanes in a fixed order.
inline float hsum(__m512 v) {
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return x86::hsum(_mm256_add_ps(_mm512_castps512_ps256(v), hi));
}

// iacc += Σ pairs (w·x) · scale over 64 elements.
inline __m512i scaled_dot(__m512i iacc, __m512i w, const int8_t* x, __m512i scale16) {
    return _mm512_dpwssd_epi32(iacc, _mm512_maddubs_epi16(w, _mm512_loadu_si512(x)), scale16);
}

// Q4_K and Q5_K share everything but the fifth bit (HasHigh: Q5_K's qh).
template <typename Block, bool HasHigh, int C>
void dot_cols_k4(const Block* w, const QDotActs& x, int64_t n_blocks, float* out) {
    const BlockQ8_K* xb[C];
    __m512 acc[C];
    for (int c = 0; c < C; ++c) {
        xb[c] = reinterpret_cast<const BlockQ8_K*>(x.row(c));
        acc[c] = _mm512_setzero_ps();
    }
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const Block& wb = w[b];
        x86::prefetch_ahead(&wb, 3);
        const x86::ScalesMinsK4 sm = x86::unpack_scales_mins_k4(wb.scales);
        const __m512i sc16 = _mm512_zextsi128_si512(
            _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sm.sc))));
        __m512i qh = _mm512_setzero_si512();
        if constexpr (HasHigh) qh = _mm512_broadcast_i64x4(load256(wb.qh));
        __m512i iacc[C];
        for (int c = 0; c < C; ++c)
            iacc[c] = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {  // elements 64p..64p+63: sub-blocks 2p and 2p+1
            const __m256i q = load256(wb.qs + 32 * p);
            __m512i wv = _mm512_and_si512(concat(q, _mm256_srli_epi16(q, 4)), low4);
            if constexpr (HasHigh) {  // bit s of qh[l] is the fifth bit of element 32s + l
                const __m512i bit = concat(_mm256_set1_epi8(static_cast<char>(1 << (2 * p))),
                                           _mm256_set1_epi8(static_cast<char>(1 << (2 * p + 1))));
                const __mmask64 set = _mm512_test_epi8_mask(qh, bit);
                wv = _mm512_mask_add_epi8(wv, set, wv, _mm512_set1_epi8(16));
            }
            const __m512i pick = concat(_mm256_set1_epi16(static_cast<int16_t>(2 * p)),
                                        _mm256_set1_epi16(static_cast<int16_t>(2 * p + 1)));
            const __m512i s = _mm512_permutexvar_epi16(pick, sc16);
#pragma GCC unroll 8
            for (int c = 0; c < C; ++c)
                iacc[c] = scaled_dot(iacc[c], wv, xb[c][b].qs + 64 * p, s);
        }
        // acc += dx · (d·isum − dmin·imin), lane by lane.
        const __m512 d = _mm512_set1_ps(f16(wb.d)), dmin = _mm512_set1_ps(f16(wb.dmin));
        const __m256i mins = x86::duplicate_mins16(sm.m);
        for (int c = 0; c < C; ++c) {
            const BlockQ8_K& xc = xb[c][b];
            const __m256i imin = _mm256_madd_epi16(load256(xc.bsums), mins);
            __m512 t = _mm512_mul_ps(to_float(iacc[c]), d);
            t = _mm512_fnmadd_ps(_mm512_zextps256_ps512(_mm256_cvtepi32_ps(imin)), dmin, t);
            acc[c] = _mm512_fmadd_ps(t, _mm512_set1_ps(xc.d), acc[c]);
        }
    }
    for (int c = 0; c < C; ++c)
        out[c] = hsum(acc[c]);
}

template <int C>
void dot_cols_q6_k(const BlockQ6_K* w, const QDotActs& x, int64_t n_blocks, float* out) {
    const BlockQ8_K* xb[C];
    __m512 acc[C];
    for (int c = 0; c < C; ++c) {
        xb[c] = reinterpret_cast<const BlockQ8_K*>(x.row(c));
        acc[c] = _mm512_setzero_ps();
    }
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    const __m512i lane_over8 = _mm512_load_si512(kLaneOver8);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const BlockQ6_K& wb = w[b];
        x86::prefetch_ahead(&wb, 4);
        const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales));
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        const __m512i sc16z = _mm512_zextsi256_si512(sc16);
        __m512i iacc[C];
        for (int c = 0; c < C; ++c)
            iacc[c] = _mm512_setzero_si512();
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m512i ql = _mm512_loadu_si512(wb.ql + 64 * h);
            const __m256i qh = load256(wb.qh + 32 * h);
            // Chunk 2h+g = elements 128h + 64g + (0..63): nibble g of ql[64h + 0..63], bits
            // 4g..4g+1 (first 32) and 4g+2..4g+3 (last 32) of qh[32h + l].
            const __m512i q[2] = {
                _mm512_or_si512(_mm512_and_si512(ql, low4),
                                _mm512_and_si512(concat(_mm256_slli_epi16(qh, 4),
                                                        _mm256_slli_epi16(qh, 2)),
                                                 bits45)),
                _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                _mm512_and_si512(concat(qh, _mm256_srli_epi16(qh, 2)), bits45)),
            };
#pragma GCC unroll 2
            for (int g = 0; g < 2; ++g) {
                const int chunk = 2 * h + g;  // sub-blocks 4·chunk .. 4·chunk+3, 16 lanes each
                const __m512i pick = _mm512_add_epi16(
                    lane_over8, _mm512_set1_epi16(static_cast<int16_t>(4 * chunk)));
                const __m512i s = _mm512_permutexvar_epi16(pick, sc16z);
#pragma GCC unroll 8
                for (int c = 0; c < C; ++c)
                    iacc[c] = scaled_dot(iacc[c], q[g], xb[c][b].qs + 64 * chunk, s);
            }
        }
        const __m512 d = _mm512_set1_ps(f16(wb.d));
        for (int c = 0; c < C; ++c) {  // acc += dx · d·(isum − 32·Σ sc·bsum)
            const BlockQ8_K& xc = xb[c][b];
            const __m256i bias = _mm256_madd_epi16(load256(xc.bsums), sc16);
            const __m512i isum =
                _mm512_sub_epi32(iacc[c], _mm512_zextsi256_si512(_mm256_slli_epi32(bias, 5)));
            acc[c] =
                _mm512_fmadd_ps(_mm512_mul_ps(to_float(isum), d), _mm512_set1_ps(xc.d), acc[c]);
        }
    }
    for (int c = 0; c < C; ++c)
        out[c] = hsum(acc[c]);
}

template <typename Block, int C>
void dot_cols(const Block* w, const QDotActs& x, int64_t n_blocks, float* out) {
    if constexpr (std::is_same_v<Block, BlockQ6_K>)
        dot_cols_q6_k<C>(w, x, n_blocks, out);
    else
        dot_cols_k4<Block, std::is_same_v<Block, BlockQ5_K>, C>(w, x, n_blocks, out);
}

// All 8 rows of a group at once: 2 accumulators per row fit the 32 zmm registers.
template <typename Block>
void dot_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    const auto* wb = static_cast<const Block*>(w);
    switch (n_cols) {
        case 1: dot_cols<Block, 1>(wb, x, n_blocks, out); break;
        case 2: dot_cols<Block, 2>(wb, x, n_blocks, out); break;
        case 3: dot_cols<Block, 3>(wb, x, n_blocks, out); break;
        case 4: dot_cols<Block, 4>(wb, x, n_blocks, out); break;
        case 5: dot_cols<Block, 5>(wb, x, n_blocks, out); break;
        case 6: dot_cols<Block, 6>(wb, x, n_blocks, out); break;
        case 7: dot_cols<Block, 7>(wb, x, n_blocks, out); break;
        default: dot_cols<Block, 8>(wb, x, n_blocks, out); break;
    }
}

}  // namespace

QDotFn qdot_avx512_k(GgmlType type) {
    static_assert(kQDotMaxCols == 8, "dot_rows handles groups of up to 8 rows");
    switch (type) {
        case GgmlType::Q4_K: return dot_rows<BlockQ4_K>;
        case GgmlType::Q5_K: return dot_rows<BlockQ5_K>;
        case GgmlType::Q6_K: return dot_rows<BlockQ6_K>;
        default: return nullptr;
    }
}

}  // namespace strata::cpu

#pragma GCC pop_options

#else  // not x86-64: no AVX-512 kernels

namespace strata::cpu {
QDotFn qdot_avx512_k(GgmlType) {
    return nullptr;
}
}  // namespace strata::cpu

#endif
