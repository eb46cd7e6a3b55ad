// AVX-512 VNNI dot products of the 32-element weight formats. The signed ones (Q4_0, Q5_0,
// Q8_0, IQ4_NL) go two blocks to one vpdpbusd against Q8_0 activations in pairs (act_lanes.h):
// the activations are the unsigned operand (q + 128), the decoded weights the signed one, and
// −128·Σw per lane, the offset's share, is the sum's starting value, computed once per weight
// pair for every activation row; each lane then holds an exact sum of one block, scaled by dw·dx
// in float and accumulated per lane (the even block in lanes 0-7, the odd one in 8-15), summed
// at the end: qdot_scalar_legacy.cpp's integer arithmetic, another float summation order.
// Q4_1 / Q5_1 (unsigned weights, Q8_1 partner) keep qdot_legacy_x86.h's block-at-a-time form:
// one vpdpbusd per block, up to 8 activation rows (32 vector registers).
#include "kernels_cpu/qdot.h"

#include <type_traits>

#include "kernels_cpu/act_lanes.h"
#include "kernels_cpu/simd_x86.h"
#include "kernels_cpu/unpack_legacy_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

#include "kernels_cpu/simd_f32_avx512.h"

#include "kernels_cpu/qdot_legacy_x86.h"

namespace strata::cpu {
namespace {

// u8·s8 products summed in fours straight to int32 by one vpdpbusd.
struct Avx512Vnni {
    static constexpr int kMaxCols = 8;
    static __m256i dot_u8s8(__m256i u, __m256i s) {
        return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
    }
};

// Blocks b and b + 1 (Whole) or block b alone (the last of an odd count: the upper half zero,
// as the activations' missing block is) into the C rows' accumulators.
template <typename Dec, int C, bool Whole>
__attribute__((always_inline)) inline void accumulate_pair(const typename Dec::Block* w, int64_t b,
                                                           const BlockQ8_0Pair* const* xp, __m512 (&acc)[C]) {
    const __m256i w0 = Dec::decode(w[b]);
    const __m256i w1 = Whole ? Dec::decode(w[b + 1]) : _mm256_setzero_si256();
    const __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(w0), w1, 1);
    const __m256 d1 = Whole ? _mm256_set1_ps(x86::f16(w[b + 1].d)) : _mm256_setzero_ps();
    const __m512 dw = _mm512_castpd_ps(_mm512_insertf64x4(
        _mm512_castps_pd(_mm512_castps256_ps512(_mm256_set1_ps(x86::f16(w[b].d)))), _mm256_castps_pd(d1), 1));
    const __m512i offset =
        _mm512_sub_epi32(_mm512_setzero_si512(),
                         _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), wv));
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        const BlockQ8_0Pair& xc = xp[c][b / kPairBlocks];
        const __m512i s = _mm512_dpbusd_epi32(offset, _mm512_loadu_si512(xc.qs), wv);
        acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_loadu_ps(xc.d)), acc[c]);
    }
}

template <typename Dec, int C>
void dot_pairs(const typename Dec::Block* w, const QDotActs& x, int64_t n_blocks, float* out) {
    static_assert(Dec::Signed, "pairs take the signed formats");
    const BlockQ8_0Pair* xp[C];
    __m512 acc[C];
    for (int c = 0; c < C; ++c) {
        xp[c] = reinterpret_cast<const BlockQ8_0Pair*>(x.row(c));
        acc[c] = _mm512_setzero_ps();
    }
    int64_t b = 0;
    for (; b + 1 < n_blocks; b += kPairBlocks) {
        x86::prefetch_ahead(w + b, 1);
        accumulate_pair<Dec, C, true>(w, b, xp, acc);
    }
    if (b < n_blocks) accumulate_pair<Dec, C, false>(w, b, xp, acc);
    for (int c = 0; c < C; ++c)
        out[c] = SimdAvx512::hsum(acc[c]);
}

template <typename Dec>
void dot_pair_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    const auto* wb = static_cast<const typename Dec::Block*>(w);
    with_group_size(n_cols, [&](auto c) { dot_pairs<Dec, decltype(c)::value>(wb, x, n_blocks, out); });
}

}  // namespace

QDotFn qdot_avx512_legacy(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0: return dot_pair_rows<x86::DecodeQ4_0>;
        case GgmlType::Q5_0: return dot_pair_rows<x86::DecodeQ5_0>;
        case GgmlType::Q8_0: return dot_pair_rows<x86::DecodeQ8_0>;
        case GgmlType::IQ4_NL: return dot_pair_rows<x86::DecodeIq4Nl>;
        default: return legacy_x86::dot_table<Avx512Vnni>(type);
    }
}

QuantizeFn qdot_avx512_legacy_acts(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
        case GgmlType::IQ4_NL: return quantize_q8_0_pairs;
        default: return nullptr;
    }
}

}  // namespace strata::cpu

#pragma GCC pop_options
