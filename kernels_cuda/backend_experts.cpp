// CudaBackend::expert_ffn: a decode token's experts on the device in six launches, however many
// there are: x quantized once (or reused), the gates and the ups as two batched GEMVs (one
// column per expert), the activation writing h quantized per expert, the downs as one batched
// GEMV, and their weighted sum added to y (combine_rows). Experts whose types or width differ
// from the first's, or whose types lack a dp4a kernel, run as separate products in the same call.
#include <algorithm>
#include <span>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/op_checks.h"
#include "kernels_cuda/backend_impl.h"
#include "kernels_cuda/cuda_check.h"

namespace strata::cuda {
namespace {

using Impl = CudaBackend::Impl;

// Weight rows one warp streams: the configured count, halved while the launch would leave
// multiprocessors idle (as matmul chooses for one matrix).
int rows_per_warp(int configured, int64_t rows, int sm_count) {
    int r = configured;
    while (r > 1 && rows / r < sm_count) r /= 2;
    return r;
}

void check_args(const char* op, const ExpertFfnArgs& args, const Tensor& y) {
    check_expert_ffn_shapes(op, args, y);
    check_device_f32(op, "x", *args.x);
    check_device_f32(op, "y", y);
    if (args.act != Activation::Silu && args.act != Activation::GeluTanh) {
        throw UnsupportedError(cat(op, ": activation id ", static_cast<int>(args.act), " is not supported on the CUDA backend"));
    }
    for (const ExpertRef& e : args.experts) {
        for (const Tensor* t : {e.gate, e.up, e.down}) {
            check_device_rows(op, "an expert matrix", *t);
            if (!codec_supported(t->type)) {
                throw UnsupportedError(cat(op, ": weight type ", type_traits(t->type).name, " is not supported on the CUDA backend"));
            }
        }
    }
}

// Whether the batched GEMVs take every expert: the first's types (with dp4a kernels), width and
// row strides throughout, whole q8 blocks, activations quantized.
bool batchable(const ExpertFfnArgs& args, const CudaBackendOptions& options) {
    const ExpertRef& first = args.experts[0];
    const int64_t n_embd = args.x->ne[0], width = first.gate->ne[1];
    if (!options.quantize_activations || n_embd % 32 != 0 || width % 32 != 0) return false;
    for (const Tensor* t : {first.gate, first.up, first.down})
        if (!gemv_q8_supported(t->type)) return false;
    return std::all_of(args.experts.begin(), args.experts.end(), [&](const ExpertRef& e) {
        return e.gate->type == first.gate->type && e.up->type == first.up->type && e.down->type == first.down->type &&
               e.gate->ne[1] == width && e.gate->nb[1] == first.gate->nb[1] && e.up->nb[1] == first.up->nb[1] &&
               e.down->nb[1] == first.down->nb[1];
    });
}

// The scratch of one call: gate and up [width, n_e], the experts' outputs [n_embd, n_e].
struct ExpertBufs {
    float* gate;
    float* up;
    float* out;
};

// Into b: gate_j · x and up_j · x, h_j = act(gate_j · x) ⊙ up_j · x quantized per expert, and
// out_j = down_j · h_j, in batched launches of at most kGemvBatchMax experts.
void queue_batched(Impl& s, const ExpertFfnArgs& args, const ExpertBufs& b) {
    const std::span<const ExpertRef> ex = args.experts;
    const ExpertRef& first = ex[0];
    const Tensor& x = *args.x;
    const auto n_e = static_cast<int64_t>(ex.size());
    const int64_t n_embd = x.ne[0], width = first.gate->ne[1];
    const Impl::Q8Scratch q8x = s.q8_scratch(1, n_embd);
    const Impl::QuantizedX& last = s.quantized_x;
    const bool reuse = s.options.reuse_quantized_activations && last.valid && last.data == x.data &&
                       last.ne == x.ne && last.nb == x.nb && last.buf == q8x.buf;
    if (!reuse) {
        s.forget_quantized_x();
        quantize_rows_q8(f32_view(x), q8x.xq, q8x.xds, s.stream);
    }
    const int r_in = rows_per_warp(s.options.gemv_rows_per_warp, width * n_e, s.sm_count);
    for (int64_t j0 = 0; j0 < n_e; j0 += kGemvBatchMax) {
        const int count = static_cast<int>(std::min<int64_t>(kGemvBatchMax, n_e - j0));
        GemvBatch gates, ups;
        for (int j = 0; j < count; ++j) {
            const ExpertRef& e = ex[static_cast<size_t>(j0 + j)];
            gates.w[j] = static_cast<const uint8_t*>(e.gate->data);
            gates.y[j] = b.gate + (j0 + j) * width;
            ups.w[j] = static_cast<const uint8_t*>(e.up->data);
            ups.y[j] = b.up + (j0 + j) * width;
        }
        gemv_q8_batch(first.gate->type, gates, count, first.gate->nb[1], n_embd, width, q8x.xq, q8x.xds, r_in, s.stream);
        gemv_q8_batch(first.up->type, ups, count, first.up->nb[1], n_embd, width, q8x.xq, q8x.xds, r_in, s.stream);
    }
    // h [width, n_e] = act(gate) ⊙ up, written quantized per expert row for the downs.
    s.forget_quantized_x();
    const Impl::Q8Scratch q8h = s.q8_scratch(n_e, width);
    const Tensor gates = Tensor::contiguous(GgmlType::F32, b.gate, {width, n_e}, MemoryKind::Device);
    const Tensor ups = Tensor::contiguous(GgmlType::F32, b.up, {width, n_e}, MemoryKind::Device);
    gated_activation(f32_view(gates), f32_view(ups), args.act, f32_view(gates), q8h.xq, q8h.xds, s.stream);
    const int r_out = rows_per_warp(s.options.gemv_rows_per_warp, n_embd * n_e, s.sm_count);
    for (int64_t j0 = 0; j0 < n_e; j0 += kGemvBatchMax) {
        const int count = static_cast<int>(std::min<int64_t>(kGemvBatchMax, n_e - j0));
        GemvBatch downs;
        for (int j = 0; j < count; ++j) {
            downs.w[j] = static_cast<const uint8_t*>(ex[static_cast<size_t>(j0 + j)].down->data);
            downs.y[j] = b.out + (j0 + j) * n_embd;
            downs.x_row[j] = static_cast<int32_t>(j0 + j);
        }
        gemv_q8_batch(first.down->type, downs, count, first.down->nb[1], width, n_embd, q8h.xq, q8h.xds, r_out, s.stream);
    }
}

}  // namespace

void CudaBackend::expert_ffn(const ExpertFfnArgs& args, Tensor& y) {
    const char* op = "expert_ffn";
    check_args(op, args, y);
    Impl& s = *impl_;
    const std::span<const ExpertRef> ex = args.experts;
    const auto n_e = static_cast<int64_t>(ex.size());
    if (n_e == 0) return;
    const Tensor& x = *args.x;
    const int64_t n_embd = x.ne[0];
    int64_t max_width = 0;
    for (const ExpertRef& e : ex) max_width = std::max(max_width, e.gate->ne[1]);
    // In the cuBLAS path's weight tile, which no op uses across calls.
    const auto floats = static_cast<uint64_t>((2 * max_width + n_embd) * n_e);
    auto* buf = static_cast<float*>(s.scratch(s.w_tile, floats * sizeof(float), "expert_ffn scratch"));
    const ExpertBufs b{buf, buf + max_width * n_e, buf + 2 * max_width * n_e};
    const Tensor outs = Tensor::contiguous(GgmlType::F32, b.out, {n_embd, n_e}, MemoryKind::Device);

    if (batchable(args, s.options)) {
        const OpScope timed = s.time_op(op);
        queue_batched(s, args, b);
    } else {  // one expert at a time, through the backend's own ops
        for (int64_t j = 0; j < n_e; ++j) {
            const ExpertRef& e = ex[static_cast<size_t>(j)];
            const int64_t w = e.gate->ne[1];
            Tensor g = Tensor::contiguous(GgmlType::F32, b.gate, {w, 1}, MemoryKind::Device);
            Tensor u = Tensor::contiguous(GgmlType::F32, b.up, {w, 1}, MemoryKind::Device);
            Tensor o = outs.rows(j, 1);
            matmul(*e.gate, x, g);
            matmul(*e.up, x, u);
            gated_activation(g, u, args.act, g);
            matmul(*e.down, g, o);
        }
    }
    s.forget_quantized_x();  // y changes below
    // y += Σ_j weight_j · out_j
    std::vector<int32_t> rows(static_cast<size_t>(n_e));
    std::vector<float> weights(static_cast<size_t>(n_e));
    for (int64_t j = 0; j < n_e; ++j) {
        rows[static_cast<size_t>(j)] = static_cast<int32_t>(j);
        weights[static_cast<size_t>(j)] = ex[static_cast<size_t>(j)].weight;
    }
    const int32_t offsets[2] = {0, static_cast<int32_t>(n_e)};
    const OpScope timed = s.time_op("expert_ffn sum");
    cuda::combine_rows(f32_view(outs), s.stage(offsets, 2), s.stage(rows.data(), n_e), s.stage(weights.data(), n_e),
                       f32_view(y), true, s.stream);
}

}  // namespace strata::cuda
