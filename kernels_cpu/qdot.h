// Internal to kernels_cpu: quantized dot-product kernels. One weight row is dotted with up to
// kQDotMaxCols activation rows quantized to the weight type's partner (docs/FORMATS.md §2.5), so
// each weight block is loaded and unpacked once per group of activation rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <type_traits>

#include "kernels_cpu/kernel_variant.h"
#include "quant/ggml_type.h"

namespace strata::cpu {

inline constexpr int kQDotMaxCols = 8;

// Activation rows as the kernels read them: quantized to the partner type (by quant/'s reference
// quantizer or its bit-identical twin), plus (Q8_0 / Q8_1 only) each block's f16 scale expanded
// to float once per matmul, so the per-block work of the 32-element kernels has one conversion
// fewer.
struct QDotActs {
    const uint8_t* q = nullptr;  // row c starts at q + c·q_stride: n_blocks partner blocks
    size_t q_stride = 0;         // bytes
    const float* d = nullptr;    // row c starts at d + c·d_stride: the blocks' d as float;
    size_t d_stride = 0;         // null for Q8_K (its d is already float)

    const uint8_t* row(int64_t c) const { return q + static_cast<size_t>(c) * q_stride; }
    const float* scales(int64_t c) const { return d + static_cast<size_t>(c) * d_stride; }
    QDotActs from_row(int64_t c) const {
        return {row(c), q_stride, d != nullptr ? scales(c) : nullptr, d_stride};
    }
};

// Fills d[0 .. n_blocks) with the float value of each block's f16 d (exact), for the Q8_0 and
// Q8_1 rows at `row`; does nothing for other types.
void expand_act_scales(GgmlType act_type, const void* row, int64_t n_blocks, float* d);

// out[c] = Σ over the row of W·x_c, for c = 0 .. n_cols-1 (1 <= n_cols <= kQDotMaxCols).
//  - w: one weight row of n_blocks blocks of the weight type; x: n_cols activation rows of
//    n_blocks partner blocks each (the partner block has as many elements as the weight block).
//  - Each out[c] depends on (w, row c) alone: the same bits for any n_cols and position c, so
//    results do not depend on how a matmul groups rows or splits them over threads.
//  - Integer block sums are exact; only the float accumulation order differs between
//    variants (documented per variant file).
using QDotFn = void (*)(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols,
                        float* out);

// Calls f(std::integral_constant<int, C>{}) with C = n_cols (1 <= n_cols <= kQDotMaxCols): the
// kernels compile one loop per group size, so that every accumulator stays in a register.
template <typename F>
void with_group_size(int n_cols, F&& f) {
    static_assert(kQDotMaxCols == 8, "one case per group size");
    switch (n_cols) {
        case 1: f(std::integral_constant<int, 1>{}); break;
        case 2: f(std::integral_constant<int, 2>{}); break;
        case 3: f(std::integral_constant<int, 3>{}); break;
        case 4: f(std::integral_constant<int, 4>{}); break;
        case 5: f(std::integral_constant<int, 5>{}); break;
        case 6: f(std::integral_constant<int, 6>{}); break;
        case 7: f(std::integral_constant<int, 7>{}); break;
        default: f(std::integral_constant<int, 8>{}); break;
    }
}

// A weight row of n_blocks blocks decoded to `out` (64-byte aligned scratch) for dot_decoded.
using QDecodeRowFn = void (*)(const void* w, int64_t n_blocks, void* out);

struct QDotKernel {
    GgmlType act_type;    // partner format the activations must be quantized to
    QuantizeFn quantize;  // to act_type: quant/'s reference for Scalar, its bit-identical SIMD
                          // twin (quantize_act.h) for the SIMD variants where there is one, or
                          // act_type's values in a kernel's own block layout (act_lanes.h)
    QDotFn dot;
    size_t act_block_bytes;  // bytes per act_group partner blocks as `quantize` writes them
    int act_group = 1;       // partner blocks per act_block_bytes (a row's last group may be short)
    // Optional, for weights whose blocks cost more to decode than to meet a row (the lattice
    // i-quants): decode_row writes a row's blocks, decoded_block_bytes each, and dot_decoded
    // meets that decoded row with activation rows as `dot` meets the encoded one (the same
    // bits). quantized_matmul decodes a unit's rows once when it meets more activation rows
    // than one call takes (prompt passes), instead of once per kQDotMaxCols of them.
    QDecodeRowFn decode_row = nullptr;
    QDotFn dot_decoded = nullptr;
    size_t decoded_block_bytes = 0;
};

// Bytes of one activation row of k elements as kernel.quantize writes it.
size_t act_row_bytes(const QDotKernel& kernel, int64_t k);
// Where element e0 (a multiple of the partner block size times act_group) starts in a row.
size_t act_offset(const QDotKernel& kernel, int64_t e0);
// Whether the kernel reads QDotActs::d (Q8_0 / Q8_1 blocks in their own layout), so the caller
// fills it with expand_act_scales.
bool reads_expanded_scales(const QDotKernel& kernel);

// Whether activations quantized by a.quantize can be read by b.dot as they are (same values,
// same layout), so one quantized copy serves both.
bool same_acts(const QDotKernel& a, const QDotKernel& b);

// Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1, Q8_K for Q2_K..Q6_K, IQ4_XS, the lattice
// i-quants (IQ1_S..IQ3_S) and TQ1_0/TQ2_0; F32 for types without an integer kernel.
GgmlType qdot_partner_type(GgmlType type);

// The kernel for weights of `type` in variant v (Scalar, Avx2 or Avx512), or nullptr where that
// variant has none; matmul then keeps the f32 dequantize path. Never null for Scalar where
// qdot_partner_type(type) is not F32.
const QDotKernel* find_qdot_kernel(GgmlType type, KernelVariant v);

// The CPU dot kernels' revisions per weight type (BackendCapabilities::kernel_revisions): 3 for
// the lattice i-quants (2: decoded in registers, 3: rows decoded once per prompt pass, both
// 2026-12-02); the other types are at 1. Raise a type's entry when its kernels' speed changes.
std::map<GgmlType, int> qdot_kernel_revisions();

// Per-file tables behind find_qdot_kernel; each returns nullptr for types it does not cover.
QDotFn qdot_scalar_legacy(GgmlType type);  // qdot_scalar_legacy.cpp: 32-element formats
QDotFn qdot_scalar_k(GgmlType type);       // qdot_scalar_k.cpp: 256-element formats
QDotFn qdot_avx2_legacy(GgmlType type);    // qdot_avx2_legacy.cpp
QDotFn qdot_avx2_k(GgmlType type);         // qdot_avx2_k.cpp
QDotFn qdot_avxvnni_k(GgmlType type);      // qdot_avxvnni_k.cpp: the AVX2 variant's Q4_K/Q5_K with
                                           // AVX-VNNI, reading quantize_q8_k_lanes4's layout
QDotFn qdot_avx512_legacy(GgmlType type);  // qdot_avx512_legacy.cpp
QuantizeFn qdot_avx512_legacy_acts(GgmlType type);  // its activation layout's quantizer
QDotFn qdot_avx512_k(GgmlType type);       // qdot_avx512_k.cpp
QuantizeFn qdot_avx512_k_acts(GgmlType type);  // its activation layouts' quantizers
QDotFn qdot_scalar_iq(GgmlType type);      // qdot_iq.cpp: i-quants and ternary, decoded blocks
QDotFn qdot_avx2_iq(GgmlType type);        // qdot_iq.cpp (also used by the Avx512 variant)
// The lattice i-quants' decoded rows (QDotKernel::decode_row): the decoder and its AVX2 dot
// (qdot_avx2_iq.cpp; empty for other types), and the AVX-512BW dot over the same rows
// (qdot_avx512_iq.cpp).
struct QDotDecoded {
    QDecodeRowFn decode_row = nullptr;
    QDotFn dot = nullptr;
    size_t block_bytes = 0;
};
QDotDecoded qdot_avx2_iq_decoded(GgmlType type);
QDotFn qdot_avx512_iq_decoded();

}  // namespace strata::cpu
