// Internal to kernels_cpu: the per-row kernels of the non-matmul ops (norm, RoPE, element-wise,
// activations, f16/q8_0/q4_0 row conversion, one attention chunk), one table per kernel variant
// like qdot.h's: scalar C++ (the oracle and the fallback), AVX2 + FMA + F16C, AVX-512. The op
// files check arguments and split rows over threads; a table entry handles one row (or chunk)
// alone, so results never depend on the thread split. Tails are done as a padded vector, so an
// element's result depends on its inputs only, never on its position in the row.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/core/op_types.h"
#include "kernels_cpu/attention_chunk.h"
#include "kernels_cpu/kernel_variant.h"
#include "quant/input_major.h"
#include "quant/ggml_type.h"

namespace strata::cpu {

struct RowOps {
    // Σ x[i]² over n elements, in double.
    double (*sum_squares)(const float* x, int64_t n);
    // y[i] = (x[i]·inv)·w[i] (w may be null: y[i] = x[i]·inv); y may alias x.
    void (*scale_mul)(const float* x, const float* w, float inv, float* y, int64_t n);
    // RoPE of one head in place with cos/sin [half] of its token: NORM rotates (x[2i], x[2i+1]),
    // NEOX (x[i], x[i + half]).
    void (*rope_norm)(float* x, const float* cos, const float* sin, int64_t half);
    void (*rope_neox)(float* x, const float* cos, const float* sin, int64_t half);
    // y = a + b; y may alias a.
    void (*add)(const float* a, const float* b, float* y, int64_t n);
    // x *= s
    void (*scale)(float* x, float s, int64_t n);
    // x = cap·tanh(x/cap)
    void (*softcap)(float* x, float cap, int64_t n);
    // y = silu(g)·u and y = gelu_tanh(g)·u; y may alias g or u.
    void (*silu_mul)(const float* g, const float* u, float* y, int64_t n);
    void (*gelu_tanh_mul)(const float* g, const float* u, float* y, int64_t n);
    // Row conversions (quant/'s DequantizeFn / QuantizeFn contract), or null where the
    // variant has none (use type_traits' reference). Quantizers are bit-identical to quant/'s.
    DequantizeFn (*find_dequantize)(GgmlType type);
    QuantizeFn (*find_quantize)(GgmlType type);
    // One attention chunk (attention_chunk.h); attention_supports says whether this variant
    // handles the cache types and head sizes (else the driver uses the scalar table's).
    bool (*attention_supports)(GgmlType k_type, GgmlType v_type, int64_t dk, int64_t dv);
    AttentionChunkFn attention_chunk;
    // y[0, w.n_out) = the product of the input-major Q4_K copy (quant/input_major.h) with x over
    // chunks [c0, c1), reading only the columns whose bit is set in masks[c] (bit i: x[32c + i]
    // is nonzero); y is overwritten. ahead: bytes ahead in each active column that the SIMD
    // kernels prefetch into L2.
    void (*input_major_q4k)(const InputMajorQ4K& w, const float* x, const uint32_t* masks, int64_t c0, int64_t c1,
                            int64_t ahead, float* y);
};

// The table of variant v (Dequant uses the scalar one; SIMD variants the CPU lacks: null).
const RowOps* find_row_ops(KernelVariant v);

// The table of active_kernel_variant() (STRATA_CPU_KERNELS, set_kernel_variant).
const RowOps& row_ops();

// The active table's act(g)·u row kernel for a gated activation (silu_mul or gelu_tanh_mul);
// UnsupportedError naming `op` for another activation.
using ActMulFn = void (*)(const float* g, const float* u, float* y, int64_t n);
ActMulFn gated_act_mul(Activation act, std::string_view op);

// Per-file tables behind find_row_ops (null where the build or the CPU has none).
const RowOps& row_ops_scalar();  // row_ops_scalar.cpp
const RowOps* row_ops_avx2();    // row_ops_avx2.cpp
const RowOps* row_ops_avx512();  // row_ops_avx512.cpp

}  // namespace strata::cpu
