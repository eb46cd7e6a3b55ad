// Element-wise ops on f32 rows: add (same shape or one broadcast row), scale, softcap and the
// gated activations of the FFN (SiLU for Llama/Qwen, GELU-tanh for Gemma). The per-row loops
// come from row_ops.h's table for the active kernel variant.
#include <algorithm>

#include "engine/core/error.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/row_ops.h"

namespace strata::cpu {
namespace {

constexpr int64_t kParallelElements = 32768;  // below this, threads cost more than they save
constexpr int64_t kActivationChunk = 1024;    // elements of one row per work item

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
    const RowOps& ops = row_ops();
#pragma omp parallel for num_threads(n_threads) \
    schedule(static) if (n_rows * ne0 > kParallelElements)
    for (int64_t r = 0; r < n_rows; ++r)
        ops.add(f32_row(a, r), f32_row(b, broadcast ? 0 : r), f32_row(y, r), ne0);
}

// f(row, ne0) on each row of the f32 x [ne0, rows], in parallel when x is large.
template <class F>
void each_row(Tensor& x, int n_threads, F f) {
    const int64_t ne0 = x.ne[0];
    const int64_t n_rows = x.n_rows();
#pragma omp parallel for num_threads(n_threads) \
    schedule(static) if (n_rows * ne0 > kParallelElements)
    for (int64_t r = 0; r < n_rows; ++r)
        f(f32_row(x, r), ne0);
}

// x [ne0, rows] *= s
void scale(Tensor& x, float s, int n_threads) {
    check_f32("scale", "x", x);
    const RowOps& ops = row_ops();
    each_row(x, n_threads, [&](float* row, int64_t ne0) { ops.scale(row, s, ne0); });
}

// y[:, t] = Σ over column t's entries of weight · x[:, row], in entry order (backend.h).
void combine_rows(const Tensor& x, const RowCombine& c, Tensor& y, int n_threads) {
    check_f32("combine_rows", "x", x);
    check_f32("combine_rows", "y", y);
    check_combine_rows(x, c, y);
    const int64_t ne0 = y.ne[0];
    const int64_t n = y.ne[1];
#pragma omp parallel for num_threads(n_threads) \
    schedule(static) if (c.offsets[n] * ne0 > kParallelElements)
    for (int64_t t = 0; t < n; ++t) {
        float* yr = f32_row(y, t);
        std::fill(yr, yr + ne0, 0.0f);
        for (int32_t j = c.offsets[t]; j < c.offsets[t + 1]; ++j) {
            const float w = c.weights[j];
            const float* xr = f32_row(x, c.rows[j]);
            for (int64_t i = 0; i < ne0; ++i) yr[i] += w * xr[i];
        }
    }
}

// x [ne0, rows] = cap · tanh(x / cap)
void softcap(Tensor& x, float cap, int n_threads) {
    check_f32("softcap", "x", x);
    if (!(cap > 0.0f)) throw ArgumentError(cat("softcap: cap = ", cap, ", expected > 0"));
    const RowOps& ops = row_ops();
    each_row(x, n_threads, [&](float* row, int64_t ne0) { ops.softcap(row, cap, ne0); });
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
    const RowOps& ops = row_ops();
    const auto act_mul = act == Activation::Silu ? ops.silu_mul : ops.gelu_tanh_mul;
#pragma omp parallel for num_threads(n_threads) \
    schedule(static) if (n_items > 1 && n_items * kActivationChunk > 8192)
    for (int64_t item = 0; item < n_items; ++item) {
        const int64_t r = item / n_chunks;
        const int64_t i0 = item % n_chunks * kActivationChunk;
        const int64_t i1 = std::min(ne0, i0 + kActivationChunk);
        act_mul(f32_row(gate, r) + i0, f32_row(up, r) + i0, f32_row(y, r) + i0, i1 - i0);
    }
}

}  // namespace strata::cpu
