// Element-wise ops on f32 rows: add (same shape or one broadcast row), scale, softcap and the
// gated activations of the FFN (SiLU for Llama/Qwen, GELU-tanh for Gemma).
#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/vec.h"

namespace strata::cpu {
namespace {

constexpr int64_t kParallelElements = 32768;  // below this, threads cost more than they save
constexpr int64_t kActivationChunk = 1024;    // elements of one row per work item

inline float silu(float x) {
    return x / (1.0f + std::exp(-x));
}

inline float gelu_tanh(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    constexpr float kCoef = 0.044715f;
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
}

}  // namespace

// y [ne0, rows] = a [ne0, rows] + b ([ne0, rows] or [ne0, 1] broadcast); y may alias a.
void add(const Tensor& a, const Tensor& b, Tensor& y, int n_threads) {
    check_f32("add", "a", a);
    check_f32("add", "b", b);
    check_f32("add", "y", y);
    check_same_shape("add", "a", a, "y", y);
    const bool broadcast = b.ne != a.ne;
    if (broadcast && (b.ne[0] != a.ne[0] || b.n_rows() != 1)) {
        throw ArgumentError(cat("add: b ", b.shape_string(), " must match a ", a.shape_string(),
                                " or be one row of ", a.ne[0], " elements"));
    }
    const int64_t ne0 = a.ne[0];
    const int64_t n_rows = a.n_rows();
#pragma omp parallel for num_threads(n_threads) \
    schedule(static) if (n_rows * ne0 > kParallelElements)
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* ar = f32_row(a, r);
        const float* br = f32_row(b, broadcast ? 0 : r);
        float* yr = f32_row(y, r);
        for (int64_t i = 0; i < ne0; ++i)
            yr[i] = ar[i] + br[i];
    }
}

// x [ne0, rows] *= s
void scale(Tensor& x, float s, int n_threads) {
    check_f32("scale", "x", x);
    const int64_t ne0 = x.ne[0];
    const int64_t n_rows = x.n_rows();
#pragma omp parallel for num_threads(n_threads) \
    schedule(static) if (n_rows * ne0 > kParallelElements)
    for (int64_t r = 0; r < n_rows; ++r)
        scale_f32(f32_row(x, r), s, ne0);
}

// x [ne0, rows] = cap · tanh(x / cap)
void softcap(Tensor& x, float cap, int n_threads) {
    check_f32("softcap", "x", x);
    if (!(cap > 0.0f)) throw ArgumentError(cat("softcap: cap = ", cap, ", expected > 0"));
    const int64_t ne0 = x.ne[0];
    const int64_t n_rows = x.n_rows();
    const float inv_cap = 1.0f / cap;
#pragma omp parallel for num_threads(n_threads) \
    schedule(static) if (n_rows * ne0 > kParallelElements)
    for (int64_t r = 0; r < n_rows; ++r) {
        float* xr = f32_row(x, r);
        for (int64_t i = 0; i < ne0; ++i)
            xr[i] = cap * std::tanh(xr[i] * inv_cap);
    }
}

// y [n_ff, n] = act(gate) ⊙ up; y may alias gate or up (each element is read before written).
void gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y,
                      int n_threads) {
    check_f32("gated_activation", "gate", gate);
    check_f32("gated_activation", "up", up);
    check_f32("gated_activation", "y", y);
    check_same_shape("gated_activation", "gate", gate, "up", up);
    check_same_shape("gated_activation", "gate", gate, "y", y);
    if (act != Activation::Silu && act != Activation::GeluTanh) {
        throw UnsupportedError(cat("gated_activation: activation id ", static_cast<int>(act),
                                   " is not supported on the CPU backend"));
    }
    // Parallel over chunks of rows too: one decode token is one long row of exp/tanh work.
    const int64_t ne0 = gate.ne[0];
    const int64_t n_chunks = (ne0 + kActivationChunk - 1) / kActivationChunk;
    const int64_t n_items = gate.n_rows() * n_chunks;
#pragma omp parallel for num_threads(n_threads) \
    schedule(static) if (n_items > 1 && n_items * kActivationChunk > 8192)
    for (int64_t item = 0; item < n_items; ++item) {
        const int64_t r = item / n_chunks;
        const int64_t i0 = item % n_chunks * kActivationChunk;
        const int64_t i1 = std::min(ne0, i0 + kActivationChunk);
        const float* g = f32_row(gate, r);
        const float* u = f32_row(up, r);
        float* yr = f32_row(y, r);
        if (act == Activation::Silu) {
            for (int64_t i = i0; i < i1; ++i)
                yr[i] = silu(g[i]) * u[i];
        } else {
            for (int64_t i = i0; i < i1; ++i)
                yr[i] = gelu_tanh(g[i]) * u[i];
        }
    }
}

}  // namespace strata::cpu
