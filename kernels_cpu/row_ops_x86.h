// Internal to kernels_cpu: the x86 row-op table (row_ops.h) as one template over the f32 SIMD
// type S (SimdAvx2, SimdAvx512): row_ops_simd.h's and attention_simd.h's templates instantiated
// for S. Included by row_ops_avx2.cpp and row_ops_avx512.cpp after their #pragma GCC target and
// S's header; only reached after kernel_variant.h has checked the CPU has the features.
#pragma once

#include "kernels_cpu/attention_simd.h"
#include "kernels_cpu/input_major_simd.h"
#include "kernels_cpu/quantize_act.h"
#include "kernels_cpu/row_ops.h"
#include "kernels_cpu/row_ops_simd.h"

namespace strata::cpu::row_ops_x86 {

template <typename S>
DequantizeFn find_dequantize(GgmlType type) {
    switch (type) {
        case GgmlType::F16: return simd_f16_to_f32<S>;
        case GgmlType::Q8_0: return simd_dequantize_row<S, LoadQ8_0>;
        case GgmlType::Q4_0: return simd_dequantize_row<S, LoadQ4_0>;
        default: return nullptr;
    }
}

// Q8_0 reuses matmul's activation quantizer (AVX2, bit-identical to quant/'s); Q4_0 and the
// rest stay on the reference (one row per decoded token: not worth a twin yet).
template <typename S>
QuantizeFn find_quantize(GgmlType type) {
    switch (type) {
        case GgmlType::F16: return simd_f32_to_f16<S>;
        case GgmlType::Q8_0: return fast_act_quantizer(GgmlType::Q8_0);
        default: return nullptr;
    }
}

template <typename S>
const RowOps* table() {
    static const RowOps ops{simd_sum_squares<S>,    simd_scale_mul<S>, simd_rope_norm<S>,
                            simd_rope_neox<S>,      simd_add<S>,       simd_scale<S>,
                            simd_softcap<S>,        simd_silu_mul<S>,  simd_gelu_tanh_mul<S>,
                            find_dequantize<S>,     find_quantize<S>,  simd_attention_supports<S>,
                            simd_attention_chunk<S>, simd_input_major_q4k<S>};
    return &ops;
}

}  // namespace strata::cpu::row_ops_x86
