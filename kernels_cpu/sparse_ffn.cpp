// The ops of activation sparsity on the CPU (CATS): the thresholded gated activation of a
// batch (the dense products with the sparse model's function), the input mask (TEAL on the FFN's
// input), and the sparse FFN of decode,
// which reads only the active rows of ffn_up and of the neuron-major ffn_down (sparse_rows.h), or
// of ffn_up alone (sparse_gated_activation: the caller reads ffn_down whole),
// and the same with a trained predictor, which reads only its candidates' rows of ffn_gate.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/op_checks.h"
#include "kernels_cpu/op_args.h"
#include "kernels_cpu/op_times.h"
#include "kernels_cpu/ops.h"
#include "kernels_cpu/predicted_ffn.h"
#include "kernels_cpu/row_ops.h"
#include "kernels_cpu/sparse_rows.h"

namespace strata::cpu {
namespace {

constexpr int64_t kChunk = 1024;  // elements of act(gate) computed at a time

// act(g[0..n)) into a[0..n), by the same row kernel as gated_activation (times ones).
void activation(ActMulFn act_mul, const float* g, float* a, int64_t n) {
    static const std::vector<float> ones(kChunk, 1.0f);
    for (int64_t i = 0; i < n; i += kChunk) act_mul(g + i, ones.data(), a + i, std::min(kChunk, n - i));
}

std::vector<float>& thread_buffer(size_t n) {
    thread_local std::vector<float> buf;
    if (buf.size() < n) buf.resize(n);
    return buf;
}

// The active ones of n values a[j] (|a[j]| > threshold), in order: their neuron ids (ids[j], or j
// when ids is null) into rows and their values into h; returns how many. Branch-free: about half
// the neurons pass, in no pattern a branch predictor could learn.
int64_t compact_active(const float* a, int64_t n, float threshold, const int32_t* ids, int32_t* rows, float* h) {
    int64_t m = 0;
    for (int64_t j = 0; j < n; ++j) {
        rows[m] = ids != nullptr ? ids[j] : static_cast<int32_t>(j);
        h[m] = a[j];
        m += std::fabs(a[j]) > threshold ? 1 : 0;
    }
    return m;
}

// h[j] *= up_{rows[j]} · x: the active rows of up times the activations. upx: scratch of m floats.
void times_active_up(const Tensor& up, const float* x, const int32_t* rows, int64_t m, float* h, float* upx,
                     int n_threads, bool quantize_activations) {
    {
        const CpuOpScope timed(CpuOpTimes::from_environment(), "sparse: gather", type_traits(up.type).name);
        gather_matvec(up, x, rows, m, upx, n_threads, quantize_activations);
    }
    for (int64_t j = 0; j < m; ++j) h[j] *= upx[j];
}

// Token t's active neurons: act(gate) into scratch, their ids into rows and act·(up·x) into h
// (both of n_ff floats' room). Returns how many.
int64_t active_neurons(const SparseFfnArgs& args, ActMulFn act_mul, int64_t t, int32_t* rows, float* scratch,
                       float* h, int n_threads, bool quantize_activations) {
    const int64_t n_ff = args.gate->ne[0];
    int64_t m = 0;
    {
        const CpuOpScope timed(CpuOpTimes::from_environment(), "sparse: activation and mask");
        activation(act_mul, f32_row(*args.gate, t), scratch, n_ff);
        m = compact_active(scratch, n_ff, args.threshold, nullptr, rows, h);
    }
    times_active_up(*args.up, f32_row(*args.x, t), rows, m, h, scratch, n_threads, quantize_activations);
    return m;
}

// y += Σ_j h[j] · down_t[rows[j]].
void accumulate_active(const Tensor& down_t, const float* h, const int32_t* rows, int64_t m, float* y, int n_threads) {
    const CpuOpScope timed(CpuOpTimes::from_environment(), "sparse: accumulate", type_traits(down_t.type).name);
    accumulate_rows(down_t, h, rows, m, y, n_threads);
}

void add_counts(const SparseFfnArgs& args, int64_t evaluated, int64_t active) {
    if (args.counts == nullptr) return;
    args.counts[0] += static_cast<uint64_t>(evaluated);
    args.counts[1] += static_cast<uint64_t>(active);
}

}  // namespace

int64_t thresholded_gated_activation(const Tensor& gate, const Tensor& up, Activation act, float threshold,
                                     Tensor& y, int n_threads) {
    const char* op = "thresholded_gated_activation";
    check_f32(op, "gate", gate);
    check_f32(op, "up", up);
    check_f32(op, "y", y);
    check_same_shape(op, "gate", gate, "up", up);
    check_same_shape(op, "gate", gate, "y", y);
    const ActMulFn act_mul = gated_act_mul(act, op);
    const int64_t ne0 = gate.ne[0];
    const int64_t n_chunks = (ne0 + kChunk - 1) / kChunk;
    const int64_t n_items = gate.n_rows() * n_chunks;
    int64_t kept = 0;
#pragma omp parallel for num_threads(n_threads) schedule(static) reduction(+ : kept) if (n_items > 1 && n_items * kChunk > 8192)
    for (int64_t item = 0; item < n_items; ++item) {
        const int64_t r = item / n_chunks;
        const int64_t i0 = item % n_chunks * kChunk;
        const int64_t len = std::min(ne0, i0 + kChunk) - i0;
        float* a = thread_buffer(kChunk).data();
        activation(act_mul, f32_row(gate, r) + i0, a, len);
        const float* u = f32_row(up, r) + i0;
        float* out = f32_row(y, r) + i0;
        for (int64_t i = 0; i < len; ++i) {
            const bool on = std::fabs(a[i]) > threshold;
            out[i] = on ? a[i] * u[i] : 0.0f;
            kept += on;
        }
    }
    return kept;
}

int64_t sparse_gated_ffn(const SparseFfnArgs& args, Tensor& y, int n_threads, bool quantize_activations) {
    const char* op = "sparse_gated_ffn";
    check_sparse_ffn_shapes(op, args, y, 1);
    const Tensor &gate = *args.gate, &down_t = *args.down_t;
    check_f32(op, "gate", gate);
    check_f32(op, "x", *args.x);
    check_f32(op, "y", y);
    check_dequantizable(op, "up", *args.up);
    check_dequantizable(op, "down_t", down_t);
    const int64_t n_ff = gate.ne[0], n = args.x->n_rows();
    const ActMulFn act_mul = gated_act_mul(args.act, op);
    std::vector<float>& a = thread_buffer(static_cast<size_t>(2 * n_ff));  // act(gate), then the kept values
    std::vector<int32_t> rows(static_cast<size_t>(n_ff));
    int64_t total = 0;
    for (int64_t t = 0; t < n; ++t) {
        float* h = a.data() + n_ff;
        const int64_t m = active_neurons(args, act_mul, t, rows.data(), a.data(), h, n_threads, quantize_activations);
        accumulate_active(down_t, h, rows.data(), m, f32_row(y, t), n_threads);
        total += m;
    }
    add_counts(args, n_ff * n, total);
    return total;
}

int64_t sparse_gated_activation(const SparseFfnArgs& args, Tensor& h, int n_threads, bool quantize_activations) {
    const char* op = "sparse_gated_activation";
    check_sparse_activation_shapes(op, args, h);
    check_f32(op, "gate", *args.gate);
    check_f32(op, "x", *args.x);
    check_f32(op, "h", h);
    check_dequantizable(op, "up", *args.up);
    const int64_t n_ff = args.gate->ne[0], n = args.x->n_rows();
    const ActMulFn act_mul = gated_act_mul(args.act, op);
    std::vector<float>& a = thread_buffer(static_cast<size_t>(2 * n_ff));
    std::vector<int32_t> rows(static_cast<size_t>(n_ff));
    int64_t total = 0;
    for (int64_t t = 0; t < n; ++t) {
        const float* kept = a.data() + n_ff;
        const int64_t m = active_neurons(args, act_mul, t, rows.data(), a.data(), a.data() + n_ff, n_threads,
                                         quantize_activations);
        float* out = f32_row(h, t);
        std::fill(out, out + n_ff, 0.0f);
        for (int64_t j = 0; j < m; ++j) out[rows[static_cast<size_t>(j)]] = kept[j];
        total += m;
    }
    add_counts(args, n_ff * n, total);
    return total;
}

int64_t mask_small_values(Tensor& x, float threshold, int n_threads) {
    check_f32("mask_small_values", "x", x);
    const int64_t ne0 = x.ne[0], rows = x.n_rows();
    int64_t kept = 0;
#pragma omp parallel for num_threads(n_threads) schedule(static) reduction(+ : kept) if (rows > 1 && rows * ne0 > 65536)
    for (int64_t r = 0; r < rows; ++r) {
        float* v = f32_row(x, r);
        for (int64_t i = 0; i < ne0; ++i) {
            const bool on = std::fabs(v[i]) > threshold;
            v[i] = on ? v[i] : 0.0f;
            kept += on ? 1 : 0;
        }
    }
    return kept;
}

void input_major_matvec(const InputMajorQ4K& w, const Tensor& x, Tensor& y, int n_threads) {
    constexpr const char* op = "input_major_matvec";
    if (w.data == nullptr || !input_major_q4k_fits(w.n_in, w.n_out)) {
        throw ArgumentError(cat(op, ": no input-major copy, or a ", w.n_out, " x ", w.n_in, " one"));
    }
    check_f32(op, "x", x);
    check_f32(op, "y", y);
    if (x.ne[0] != w.n_in || x.n_rows() != 1 || y.ne[0] != w.n_out || y.n_rows() != 1 || !x.is_contiguous() ||
        !y.is_contiguous()) {
        throw ArgumentError(cat(op, ": x must be [", w.n_in, ", 1] and y [", w.n_out, ", 1], contiguous"));
    }
    input_major_matvec(w, f32_row(x, 0), f32_row(y, 0), n_threads);
}

namespace {

void check_predicted_args(const char* op, const PredictedFfnArgs& args, const Tensor& y) {
    if (args.x == nullptr || args.gate == nullptr || args.up == nullptr || args.down_t == nullptr ||
        (args.candidates == nullptr && args.n_candidates > 0)) {
        throw ArgumentError(cat(op, ": x, gate, up, down_t and the candidates must be given"));
    }
    check_f32(op, "x", *args.x);
    check_f32(op, "y", y);
    check_dequantizable(op, "gate", *args.gate);
    check_dequantizable(op, "up", *args.up);
    check_dequantizable(op, "down_t", *args.down_t);
    check_same_shape(op, "gate", *args.gate, "up", *args.up);
    check_same_shape(op, "gate", *args.gate, "down_t", *args.down_t);
    check_same_shape(op, "x", *args.x, "y", y);
    const int64_t n_embd = args.gate->ne[0], n_ff = args.gate->ne[1];
    if (args.x->ne[0] != n_embd || args.x->n_rows() != 1 || args.n_candidates < 0 || args.n_candidates > n_ff) {
        throw ArgumentError(cat(op, ": x ", args.x->shape_string(), " for gate ", args.gate->shape_string(), " (one token) and ",
                                args.n_candidates, " candidates (0..", n_ff, ")"));
    }
    for (int64_t j = 0; j < args.n_candidates; ++j) {
        const int32_t c = args.candidates[j];
        if (c < 0 || c >= n_ff || (j > 0 && c <= args.candidates[j - 1])) {
            throw ArgumentError(cat(op, ": candidate ", j, " is neuron ", c, "; candidates must ascend in [0, ", n_ff, ")"));
        }
    }
}

}  // namespace

int64_t predicted_sparse_gated_ffn(const PredictedFfnArgs& args, Tensor& y, int n_threads, bool quantize_activations) {
    const char* op = "predicted_sparse_gated_ffn";
    check_predicted_args(op, args, y);
    const int64_t n_ff = args.gate->ne[1], nc = args.n_candidates;
    const ActMulFn act_mul = gated_act_mul(args.act, op);
    std::vector<float>& buf = thread_buffer(static_cast<size_t>(2 * nc + 1));
    float* g = buf.data();       // gate·x, then act, then up·x of the active ones
    float* h = buf.data() + nc;  // the active ones' act values
    std::vector<int32_t> rows(static_cast<size_t>(nc));
    const float* x = f32_row(*args.x, 0);
    gather_matvec(*args.gate, x, args.candidates, nc, g, n_threads, quantize_activations);
    activation(act_mul, g, g, nc);
    const int64_t m = compact_active(g, nc, args.threshold, args.candidates, rows.data(), h);
    times_active_up(*args.up, x, rows.data(), m, h, g, n_threads, quantize_activations);
    accumulate_active(*args.down_t, h, rows.data(), m, f32_row(y, 0), n_threads);
    if (args.counts != nullptr) {
        args.counts[0] += static_cast<uint64_t>(n_ff);
        args.counts[1] += static_cast<uint64_t>(m);
    }
    return m;
}

}  // namespace strata::cpu
