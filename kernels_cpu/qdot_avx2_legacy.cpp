// AVX2 dot products of the 32-element weight formats with Q8_0 / Q8_1 activations. A block is
// unpacked to 32 int8 weights once and met with up to 4 activation rows: |w| · sign(x, w)
// through maddubs/madd gives the exact int32 block sum in 8 lanes, scaled by dw·dx in float and
// accumulated per lane (two accumulators by block parity), then summed: the same integer
// arithmetic as qdot_scalar_legacy.cpp, with a different float summation order.
#include "kernels_cpu/qdot.h"

#if defined(__x86_64__)
#include <type_traits>

#include "kernels_cpu/simd_x86.h"
#include "kernels_cpu/unpack_legacy_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace strata::cpu {
namespace {

using x86::DecodeIq4Nl;
using x86::DecodeQ4_0;
using x86::DecodeQ4_1;
using x86::DecodeQ5_0;
using x86::DecodeQ5_1;
using x86::DecodeQ8_0;
using x86::f16;

// Exact Σ w·x of one block as 8 int32 lanes; wu = |w| (or w when unsigned), ws = w.
template <bool Signed>
inline __m256i block_isum(__m256i wu, __m256i ws, const int8_t* xqs) {
    __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xqs));
    if constexpr (Signed) xv = _mm256_sign_epi8(xv, ws);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(wu, xv), _mm256_set1_epi16(1));
}

// One weight block against C activation rows: acc[c] += (dw·dx)·isum lane by lane, dx read
// as float from the expanded scales.
template <typename Dec, int C, typename XBlock>
__attribute__((always_inline)) inline void accumulate_block(const typename Dec::Block& wb,
                                                            const XBlock* const* xb,
                                                            const float* const* xd, int64_t b,
                                                            __m256* acc, float* mins) {
    const __m256i ws = Dec::decode(wb);
    const __m256i wu = Dec::Signed ? _mm256_sign_epi8(ws, ws) : ws;
    const __m256 dw = _mm256_set1_ps(f16(wb.d));
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
        const __m256i isum = block_isum<Dec::Signed>(wu, ws, xb[c][b].qs);
        const __m256 scale = _mm256_mul_ps(dw, _mm256_broadcast_ss(xd[c] + b));
        acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), scale, acc[c]);
        if constexpr (!Dec::Signed) mins[c] += f16(wb.m) * f16(xb[c][b].s);
    }
}

// C activation rows (C <= 4 keeps every accumulator in a register). Two accumulators per
// row, even and odd blocks, hide the FMA latency when C is small.
template <typename Dec, int C>
void dot_cols(const typename Dec::Block* w, const QDotActs& x, int64_t n_blocks, float* out) {
    using XBlock = std::conditional_t<Dec::Signed, BlockQ8_0, BlockQ8_1>;
    const XBlock* xb[C];
    const float* xd[C];
    __m256 even[C], odd[C];
    float mins[C];
    for (int c = 0; c < C; ++c) {
        xb[c] = reinterpret_cast<const XBlock*>(x.row(c));
        xd[c] = x.scales(c);
        even[c] = odd[c] = _mm256_setzero_ps();
        mins[c] = 0.0f;
    }
    int64_t b = 0;
    for (; b + 1 < n_blocks; b += 2) {
        x86::prefetch_ahead(w + b, 1);
        accumulate_block<Dec, C>(w[b], xb, xd, b, even, mins);
        accumulate_block<Dec, C>(w[b + 1], xb, xd, b + 1, odd, mins);
    }
    if (b < n_blocks) accumulate_block<Dec, C>(w[b], xb, xd, b, even, mins);
    for (int c = 0; c < C; ++c)
        out[c] = x86::hsum(_mm256_add_ps(even[c], odd[c])) + mins[c];
}

template <typename Dec>
void dot_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    const auto* wb = static_cast<const typename Dec::Block*>(w);
    for (int c = 0; c < n_cols; c += 4) {
        const QDotActs xc = x.from_row(c);
        switch (n_cols - c) {
            case 1: dot_cols<Dec, 1>(wb, xc, n_blocks, out + c); break;
            case 2: dot_cols<Dec, 2>(wb, xc, n_blocks, out + c); break;
            case 3: dot_cols<Dec, 3>(wb, xc, n_blocks, out + c); break;
            default: dot_cols<Dec, 4>(wb, xc, n_blocks, out + c); break;
        }
    }
}

}  // namespace

QDotFn qdot_avx2_legacy(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0: return dot_rows<DecodeQ4_0>;
        case GgmlType::Q4_1: return dot_rows<DecodeQ4_1>;
        case GgmlType::Q5_0: return dot_rows<DecodeQ5_0>;
        case GgmlType::Q5_1: return dot_rows<DecodeQ5_1>;
        case GgmlType::Q8_0: return dot_rows<DecodeQ8_0>;
        case GgmlType::IQ4_NL: return dot_rows<DecodeIq4Nl>;
        default: return nullptr;
    }
}

}  // namespace strata::cpu

#pragma GCC pop_options

#else  // not x86-64: no AVX2 kernels

namespace strata::cpu {
QDotFn qdot_avx2_legacy(GgmlType) {
    return nullptr;
}
}  // namespace strata::cpu

#endif
