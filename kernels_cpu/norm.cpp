// RMSNorm over rows of an f32 view, optionally times a weight: the per-layer norms and, on a
// [head_dim, n_head, n_tokens] view, the per-head q/k norms of Qwen3 and Gemma 3. The row
// kernels (Σx² in double, the scaling) come from row_ops.h's table for the active variant.
#include <cmath>

#include "engine/core/error.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/row_ops.h"

namespace strata::cpu {

// y [ne0, rows] = x / sqrt(mean(x²) + eps) · weight [ne0]; y may alias x.
void rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y, int n_threads) {
    check_f32("rms_norm", "x", x);
    check_f32("rms_norm", "y", y);
    check_same_shape("rms_norm", "x", x, "y", y);
    const int64_t ne0 = x.ne[0];
    const float* w = nullptr;
    if (weight != nullptr) {
        check_f32("rms_norm", "weight", *weight);
        if (weight->n_elements() != ne0) {
            throw ArgumentError(cat("rms_norm: weight ", weight->shape_string(), " must have ", ne0,
                                    " elements to match rows of x ", x.shape_string()));
        }
        w = weight->as<const float>();
    }
    if (!(eps >= 0.0f)) throw ArgumentError(cat("rms_norm: eps = ", eps, ", expected >= 0"));
    const int64_t n_rows = x.n_rows();
    if (ne0 == 0) return;
    const RowOps& ops = row_ops();

#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_rows * ne0 > 32768)
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = f32_row(x, r);
        float* yr = f32_row(y, r);
        const float mean =
            static_cast<float>(ops.sum_squares(xr, ne0) / static_cast<double>(ne0));
        ops.scale_mul(xr, w, 1.0f / std::sqrt(mean + eps), yr, ne0);
    }
}

}  // namespace strata::cpu
