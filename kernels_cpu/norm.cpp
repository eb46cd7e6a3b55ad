// RMSNorm over rows of an f32 view, optionally times a weight: the per-layer norms and, on a
// [head_dim, n_head, n_tokens] view, the per-head q/k norms of Qwen3 and Gemma 3.
#include <cmath>

#include "engine/core/error.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"

namespace strata::cpu {
namespace {

// Σ x² with float products summed in double (as ggml's CPU norm does), 4 partial sums.
double sum_squares(const float* x, int64_t n) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        for (int j = 0; j < 4; ++j)
            acc[j] += static_cast<double>(x[i + j] * x[i + j]);
    }
    for (; i < n; ++i)
        acc[0] += static_cast<double>(x[i] * x[i]);
    return (acc[0] + acc[2]) + (acc[1] + acc[3]);
}

}  // namespace

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

#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_rows * ne0 > 32768)
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = f32_row(x, r);
        float* yr = f32_row(y, r);
        const float mean = static_cast<float>(sum_squares(xr, ne0) / static_cast<double>(ne0));
        const float inv = 1.0f / std::sqrt(mean + eps);
        if (w != nullptr) {
            for (int64_t i = 0; i < ne0; ++i)
                yr[i] = (xr[i] * inv) * w[i];
        } else {
            for (int64_t i = 0; i < ne0; ++i)
                yr[i] = xr[i] * inv;
        }
    }
}

}  // namespace strata::cpu
