// The AVX2 + FMA + F16C row-op table (row_ops.h): row_ops_simd.h's and attention_simd.h's templates
// instantiated for SimdAvx2. Compiled for those features per function (pragma below); only
// reached after kernel_variant.h has checked the CPU has them.
#include "kernels_cpu/row_ops.h"

#if defined(__x86_64__)
// Standard headers first: what they define must stay baseline code (see simd_f32_avx2.h).
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels_cpu/quantize_act.h"
#include "kernels_cpu/simd_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include "kernels_cpu/simd_f32_avx2.h"
#include "kernels_cpu/attention_simd.h"
#include "kernels_cpu/row_ops_simd.h"

namespace strata::cpu {
namespace {

using S = SimdAvx2;

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
QuantizeFn find_quantize(GgmlType type) {
    switch (type) {
        case GgmlType::F16: return simd_f32_to_f16<S>;
        case GgmlType::Q8_0: return fast_act_quantizer(GgmlType::Q8_0);
        default: return nullptr;
    }
}

}  // namespace

const RowOps* row_ops_avx2() {
    static const RowOps ops{simd_sum_squares<S>,
                            simd_scale_mul<S>,
                            simd_rope_norm<S>,
                            simd_rope_neox<S>,
                            simd_add<S>,
                            simd_scale<S>,
                            simd_softcap<S>,
                            simd_silu_mul<S>,
                            simd_gelu_tanh_mul<S>,
                            find_dequantize,
                            find_quantize,
                            simd_attention_supports<S>,
                            simd_attention_chunk<S>};
    return &ops;
}

}  // namespace strata::cpu

#pragma GCC pop_options

#else  // not x86-64

namespace strata::cpu {
const RowOps* row_ops_avx2() {
    return nullptr;
}
}  // namespace strata::cpu

#endif
