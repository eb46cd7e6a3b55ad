// Picks the row-op table of a kernel variant (row_ops.h).
#include "kernels_cpu/row_ops.h"

#include "engine/core/error.h"

namespace strata::cpu {

const RowOps* find_row_ops(KernelVariant v) {
    switch (v) {
        case KernelVariant::Dequant:
        case KernelVariant::Scalar: return &row_ops_scalar();
        case KernelVariant::Avx2: return kernel_variant_supported(v) ? row_ops_avx2() : nullptr;
        case KernelVariant::Avx512: return kernel_variant_supported(v) ? row_ops_avx512() : nullptr;
        case KernelVariant::Auto: return find_row_ops(active_kernel_variant());
    }
    return nullptr;
}

const RowOps& row_ops() {
    const RowOps* ops = find_row_ops(active_kernel_variant());
    return ops != nullptr ? *ops : row_ops_scalar();
}

ActMulFn gated_act_mul(Activation act, std::string_view op) {
    const RowOps& ops = row_ops();
    if (act == Activation::Silu) return ops.silu_mul;
    if (act == Activation::GeluTanh) return ops.gelu_tanh_mul;
    throw UnsupportedError(cat(op, ": activation id ", static_cast<int>(act), " is not supported on the CPU backend"));
}

}  // namespace strata::cpu
