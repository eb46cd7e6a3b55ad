// AVX-VNNI (256-bit vpdpbusd: Alder Lake and later CPUs without AVX-512, the laptops Strata is
// for) dot products of Q4_K and Q5_K weights with Q8_K activations in act_lanes.h's K4 layout:
// qdot_avx512_k.cpp's kernel in two 256-bit halves (lanes 0-7 meet sub-blocks 0-3, lanes 8-15
// sub-blocks 4-7). A super-block's weights are unpacked once into eight 32-byte vpdpbusd
// operands; each activation row then costs eight vpdpbusd for 256 weights, where the AVX2 kernel
// (qdot_avx2_k.cpp) spends a maddubs, a madd and an add per 32. The lane sums are exact, scaled
// per lane by d·sc (less dmin·m times the activation sub-block sums) in float, times the row's
// d, accumulated in 16 float lanes and summed at the end: qdot_scalar_k.cpp's integer
// arithmetic, another float summation order. The AVX2 variant takes these kernels on CPUs with
// AVX-VNNI (qdot.cpp); Q6_K keeps the AVX2 kernel.
#include "kernels_cpu/qdot.h"

#include <type_traits>

#include "kernels_cpu/act_lanes.h"
#include "kernels_cpu/simd_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")

namespace strata::cpu {
namespace {

using x86::f16;
using x86::load256;

// Half h's four operands (K4 order, act_lanes.h): qword j of operand p holds elements 8p .. 8p+7
// of sub-block 4h + j, that is qs[32i + 8p .. +7] with i = 2h + j/2, low nibbles (j even) or
// high nibbles (j odd).
template <typename Block, bool HasHigh>
inline void unpack_half(const Block& wb, int h, __m256i (&w)[4]) {
    const __m256i a = load256(wb.qs + 64 * h), b = load256(wb.qs + 64 * h + 32);
    const __m256i x = _mm256_unpacklo_epi64(a, b);  // [a0, b0 | a2, b2] (qwords)
    const __m256i y = _mm256_unpackhi_epi64(a, b);  // [a1, b1 | a3, b3]
    w[0] = _mm256_permute4x64_epi64(x, _MM_SHUFFLE(1, 1, 0, 0));  // [a0, a0, b0, b0]
    w[1] = _mm256_permute4x64_epi64(y, _MM_SHUFFLE(1, 1, 0, 0));
    w[2] = _mm256_permute4x64_epi64(x, _MM_SHUFFLE(3, 3, 2, 2));
    w[3] = _mm256_permute4x64_epi64(y, _MM_SHUFFLE(3, 3, 2, 2));
    const __m256i nibble = _mm256_set_epi64x(4, 0, 4, 0), low4 = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
        w[p] = _mm256_and_si256(_mm256_srlv_epi64(w[p], nibble), low4);
        if constexpr (HasHigh) {  // bit q of qh[8p + l] is the fifth bit of sub-block q's element 8p + l
            int64_t qh;
            __builtin_memcpy(&qh, wb.qh + 8 * p, sizeof(qh));
            const int64_t one = 0x0101010101010101;
            const __m256i bit = _mm256_set_epi64x(one << (4 * h + 3), one << (4 * h + 2), one << (4 * h + 1),
                                                  one << (4 * h));
            const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_set1_epi64x(qh), bit), bit);
            w[p] = _mm256_add_epi8(w[p], _mm256_and_si256(set, _mm256_set1_epi8(16)));
        }
    }
}

template <typename Block, bool HasHigh, int C>
void dot_cols_k4(const Block* w, const QDotActs& x, int64_t n_blocks, float* out) {
    const BlockQ8KLanes* xb[C];
    __m256 acc[C][2];
    for (int c = 0; c < C; ++c) {
        xb[c] = reinterpret_cast<const BlockQ8KLanes*>(x.row(c));
        acc[c][0] = acc[c][1] = _mm256_setzero_ps();
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        const Block& wb = w[b];
        x86::prefetch_ahead(&wb, 3);
        __m256i wv[2][4];
        unpack_half<Block, HasHigh>(wb, 0, wv[0]);
        unpack_half<Block, HasHigh>(wb, 1, wv[1]);
        const x86::ScalesMinsK4 sm = x86::unpack_scales_mins_k4(wb.scales);
        const __m128i sc8 = _mm_cvtsi64_si128(static_cast<int64_t>(sm.sc));
        const __m128i pairs = _mm_unpacklo_epi8(sc8, sc8);  // lane L: sc[L / 2]
        const __m256 d = _mm256_set1_ps(f16(wb.d));
        const __m256 dsc[2] = {_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(pairs)), d),
                               _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(pairs, 8))), d)};
        // Lane L < 8: dmin·m[L] against aux[L] (the lanes only need to add up); lanes 8-15 have none.
        const __m256 dmm = _mm256_mul_ps(
            _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(sm.m)))),
            _mm256_set1_ps(f16(wb.dmin)));
#pragma GCC unroll 8
        for (int c = 0; c < C; ++c) {
            const BlockQ8KLanes& xc = xb[c][b];
            const __m256 dx = _mm256_set1_ps(xc.aux[kLanesD]);
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
                __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 4
                for (int p = 0; p < 4; ++p)  // unsigned weights, signed activations
                    s = _mm256_dpbusd_avx_epi32(s, wv[h][p], load256(xc.qs + 64 * p + 32 * h));
                __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(s), dsc[h]);
                if (h == 0) t = _mm256_fnmadd_ps(dmm, _mm256_loadu_ps(xc.aux), t);
                acc[c][h] = _mm256_fmadd_ps(t, dx, acc[c][h]);
            }
        }
    }
    for (int c = 0; c < C; ++c)
        out[c] = x86::hsum(_mm256_add_ps(acc[c][0], acc[c][1]));
}

template <typename Block>
void dot_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    const auto* wb = static_cast<const Block*>(w);
    with_group_size(n_cols, [&](auto c) {
        dot_cols_k4<Block, std::is_same_v<Block, BlockQ5_K>, decltype(c)::value>(wb, x, n_blocks, out);
    });
}

}  // namespace

QDotFn qdot_avxvnni_k(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_K: return dot_rows<BlockQ4_K>;
        case GgmlType::Q5_K: return dot_rows<BlockQ5_K>;
        default: return nullptr;
    }
}

}  // namespace strata::cpu

#pragma GCC pop_options
