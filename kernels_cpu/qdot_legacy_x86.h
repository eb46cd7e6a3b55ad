// Internal to kernels_cpu: the x86 dot products of the 32-element weight formats with Q8_0 /
// Q8_1 activations, one template for the AVX2 and the AVX-512 VNNI files, which include it after
// their #pragma GCC target and pass an Isa: kMaxCols (activation rows one weight block meets:
// 4 for AVX2's 16 vector registers, 8 for AVX-512's 32) and dot_u8s8(u, s), the exact sums of
// u8·s8 products in fours as 8 int32 lanes.
// A block is unpacked to 32 int8 weights once (unpack_legacy_x86.h), its integer sum scaled by
// dw·dx in float and accumulated per lane (two accumulators by block parity), then summed: the
// same integer arithmetic as qdot_scalar_legacy.cpp, with a different float summation order.
#pragma once

#include <type_traits>

#include "kernels_cpu/qdot.h"
#include "kernels_cpu/simd_x86.h"
#include "kernels_cpu/unpack_legacy_x86.h"
#include "quant/blocks.h"

namespace strata::cpu::legacy_x86 {

// Exact Σ w·x of one block as 8 int32 lanes; wu = |w| (or w when unsigned), ws = w.
template <typename Isa, bool Signed>
__attribute__((always_inline)) inline __m256i block_isum(__m256i wu, __m256i ws,
                                                         const int8_t* xqs) {
    __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xqs));
    if constexpr (Signed) xv = _mm256_sign_epi8(xv, ws);
    return Isa::dot_u8s8(wu, xv);
}

// One weight block against C activation rows: acc[c] += (dw·dx)·isum lane by lane, dx read
// as float from the expanded scales.
template <typename Isa, typename Dec, int C, typename XBlock>
__attribute__((always_inline)) inline void accumulate_block(const typename Dec::Block& wb,
                                                            const XBlock* const* xb,
                                                            const float* const* xd, int64_t b,
                                                            __m256* acc, float* mins) {
    const __m256i ws = Dec::decode(wb);
    const __m256i wu = Dec::Signed ? _mm256_sign_epi8(ws, ws) : ws;
    const __m256 dw = _mm256_set1_ps(x86::f16(wb.d));
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
        const __m256i isum = block_isum<Isa, Dec::Signed>(wu, ws, xb[c][b].qs);
        const __m256 scale = _mm256_mul_ps(dw, _mm256_broadcast_ss(xd[c] + b));
        acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), scale, acc[c]);
        if constexpr (!Dec::Signed) mins[c] += x86::f16(wb.m) * x86::f16(xb[c][b].s);
    }
}

// C activation rows (C <= Isa::kMaxCols keeps every accumulator in a register). Two
// accumulators per row, even and odd blocks, hide the FMA latency when C is small.
template <typename Isa, typename Dec, int C>
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
        accumulate_block<Isa, Dec, C>(w[b], xb, xd, b, even, mins);
        accumulate_block<Isa, Dec, C>(w[b + 1], xb, xd, b + 1, odd, mins);
    }
    if (b < n_blocks) accumulate_block<Isa, Dec, C>(w[b], xb, xd, b, even, mins);
    for (int c = 0; c < C; ++c)
        out[c] = x86::hsum(_mm256_add_ps(even[c], odd[c])) + mins[c];
}

// The first min(n, C) activation rows, C chosen at compile time.
template <typename Isa, typename Dec, int C = Isa::kMaxCols>
void dot_first_cols(const typename Dec::Block* w, const QDotActs& x, int64_t n_blocks, int n,
                    float* out) {
    if constexpr (C > 1) {
        if (n < C) return dot_first_cols<Isa, Dec, C - 1>(w, x, n_blocks, n, out);
    }
    dot_cols<Isa, Dec, C>(w, x, n_blocks, out);
}

template <typename Isa, typename Dec>
void dot_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    static_assert(kQDotMaxCols % Isa::kMaxCols == 0, "groups of rows tile kQDotMaxCols");
    const auto* wb = static_cast<const typename Dec::Block*>(w);
    for (int c = 0; c < n_cols; c += Isa::kMaxCols)
        dot_first_cols<Isa, Dec>(wb, x.from_row(c), n_blocks, n_cols - c, out + c);
}

// The kernel of `type` for Isa, or nullptr for the types this family does not cover.
template <typename Isa>
QDotFn dot_table(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0: return dot_rows<Isa, x86::DecodeQ4_0>;
        case GgmlType::Q4_1: return dot_rows<Isa, x86::DecodeQ4_1>;
        case GgmlType::Q5_0: return dot_rows<Isa, x86::DecodeQ5_0>;
        case GgmlType::Q5_1: return dot_rows<Isa, x86::DecodeQ5_1>;
        case GgmlType::Q8_0: return dot_rows<Isa, x86::DecodeQ8_0>;
        case GgmlType::IQ4_NL: return dot_rows<Isa, x86::DecodeIq4Nl>;
        default: return nullptr;
    }
}

}  // namespace strata::cpu::legacy_x86
