// CudaBackend's activation-sparsity ops (engine/core/backend.h): the sparse FFN of decode, mask
// based so that a recorded graph replays it (sparse_ffn.cu), and the thresholded activation of
// batches. Their scratch is one block laid out by engine/core/sparse_scratch.h.
#include "engine/core/error.h"
#include "engine/core/op_checks.h"
#include "engine/core/sparse_scratch.h"
#include "kernels_cuda/backend_impl.h"
#include "kernels_cuda/cuda_check.h"

namespace strata::cuda {
namespace {

void check_activation(const char* op, Activation act) {
    if (act != Activation::Silu && act != Activation::GeluTanh) {
        throw UnsupportedError(cat(op, ": activation id ", static_cast<int>(act), " is not supported on the CUDA backend"));
    }
}

void check_sparse_args(const SparseFfnArgs& args, const Tensor& y) {
    const char* op = "sparse_gated_ffn";
    check_sparse_ffn_shapes(op, args, y, 32);
    const Tensor &gate = *args.gate, &x = *args.x, &up = *args.up, &down_t = *args.down_t;
    check_device_f32(op, "gate", gate);
    check_device_f32(op, "x", x);
    check_device_f32(op, "y", y);
    check_device_rows(op, "up", up);
    check_device_rows(op, "down_t", down_t);
    if (!codec_supported(up.type) || !sparse_down_supported(down_t.type)) {
        throw UnsupportedError(cat(op, ": up ", type_traits(up.type).name, " / down_t ", type_traits(down_t.type).name,
                                   " is not supported on the CUDA backend"));
    }
    check_activation(op, args.act);
}

// The count the op left in `counts` (device), after waiting for the stream.
uint64_t read_kept(CudaBackend::Impl& s, const uint64_t* counts, const char* op) {
    if (s.capturing) throw UnsupportedError(cat(op, " without device counts waits for its count: not inside a graph"));
    uint64_t host[2] = {0, 0};
    CUDA_CHECK(cudaMemcpyAsync(host, counts, sizeof(host), cudaMemcpyDeviceToHost, s.stream));
    CUDA_CHECK(cudaStreamSynchronize(s.stream));
    return host[1];
}

}  // namespace

int64_t CudaBackend::thresholded_gated_activation(const Tensor& gate, const Tensor& up, Activation act, float threshold,
                                                  Tensor& y) {
    const char* op = "thresholded_gated_activation";
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op(op);
    check_device_f32(op, "gate", gate);
    check_device_f32(op, "up", up);
    check_device_f32(op, "y", y);
    check_same_shape(op, "gate", gate, "up", up);
    check_same_shape(op, "gate", gate, "y", y);
    check_activation(op, act);
    Impl& s = *impl_;
    if (s.capturing) throw UnsupportedError(cat(op, " waits for its count: not inside a graph"));
    const SparseScratchLayout layout = sparse_scratch_layout(0, 0);
    auto* buf = static_cast<uint8_t*>(s.scratch(s.sparse, layout.total, "sparse FFN scratch"));
    auto* counts = reinterpret_cast<uint64_t*>(buf + layout.counts);
    CUDA_CHECK(cudaMemsetAsync(counts, 0, 2 * sizeof(uint64_t), s.stream));
    cuda::thresholded_gated_activation(f32_view(gate), f32_view(up), act, threshold, f32_view(y), counts, s.stream);
    return static_cast<int64_t>(read_kept(s, counts, op));
}

// The masked activations of token t into h (device, n_ff floats): act(gate) where active, else 0
// (mask: its bits), then h *= up·x over the active rows only.
void CudaBackend::masked_up(const SparseFfnArgs& args, int64_t t, float* h, uint32_t* mask, uint64_t* counts) {
    Impl& s = *impl_;
    const Tensor &x = *args.x, &up = *args.up;
    const int64_t n_ff = args.gate->ne[0], n_embd = x.ne[0];
    const Tensor x_t = x.rows(t, 1);
    sparse_mask(SparseMaskLaunch{f32_view(args.gate->rows(t, 1)).row(0), h, mask, n_ff, args.act, args.threshold, counts},
                s.stream);
    if (s.options.quantize_activations && gemv_q8_supported(up.type)) {
        // x was quantized by the op before (the FFN norm or the gate's product), as matmul reuses it.
        const Impl::Q8Scratch q = s.quantized(x_t);
        gemv_q8_masked(up.type, static_cast<const uint8_t*>(up.data), up.nb[1], n_embd, n_ff, q.xq, q.xds, mask, h,
                       s.stream);
    } else {
        gemv_float_masked(up.type, static_cast<const uint8_t*>(up.data), up.nb[1], n_embd, n_ff, f32_view(x_t), mask, h,
                          s.stream);
    }
}

// The counts the op adds to: the caller's (device memory) or the scratch's, zeroed; a graph
// being recorded needs the caller's (reading the scratch's waits for the device).
uint64_t* CudaBackend::sparse_counts(const SparseFfnArgs& args, uint8_t* scratch, const char* op) {
    Impl& s = *impl_;
    if (args.counts != nullptr && !s.arena->owns(args.counts, 2 * sizeof(uint64_t))) {
        throw ArgumentError(cat(op, ": counts must be two u64 in this backend's memory"));
    }
    if (args.counts == nullptr && s.capturing) {
        throw UnsupportedError(cat(op, " without device counts waits for its count: not inside a graph"));
    }
    if (args.counts != nullptr) return args.counts;
    auto* counts = reinterpret_cast<uint64_t*>(scratch + sparse_scratch_layout(0, 0).counts);
    CUDA_CHECK(cudaMemsetAsync(counts, 0, 2 * sizeof(uint64_t), s.stream));
    return counts;
}

int64_t CudaBackend::sparse_gated_ffn(const SparseFfnArgs& args, Tensor& y) {
    const char* op = "sparse_gated_ffn";
    check_sparse_args(args, y);
    const Tensor& down_t = *args.down_t;
    Impl& s = *impl_;
    const OpScope timed = s.time_op(op);
    const int64_t n_ff = args.gate->ne[0], n_embd = args.x->ne[0], n = args.x->n_rows();
    const SparseScratchLayout layout = sparse_scratch_layout(n_ff, n_embd);
    auto* buf = static_cast<uint8_t*>(s.scratch(s.sparse, layout.total, "sparse FFN scratch"));
    uint64_t* counts = sparse_counts(args, buf, op);
    auto* h = reinterpret_cast<float*>(buf + layout.act);
    auto* mask = reinterpret_cast<uint32_t*>(buf + layout.mask);
    for (int64_t t = 0; t < n; ++t) {
        masked_up(args, t, h, mask, counts);
        SparseDownLaunch d;
        d.type = down_t.type;
        d.down_t = static_cast<const uint8_t*>(down_t.data);
        d.nb1 = down_t.nb[1];
        d.n_embd = n_embd;
        d.n_ff = n_ff;
        d.h = h;
        d.mask = mask;
        d.partial = reinterpret_cast<float*>(buf + layout.partial);
        d.y = f32_view(y.rows(t, 1)).row(0);
        sparse_down(d, s.stream);
    }
    s.forget_quantized_x();  // y may hold the bytes of an x quantized before
    if (args.counts != nullptr) return -1;
    return static_cast<int64_t>(read_kept(s, counts, op));
}

int64_t CudaBackend::sparse_gated_activation(const SparseFfnArgs& args, Tensor& h) {
    const char* op = "sparse_gated_activation";
    check_sparse_activation_shapes(op, args, h);
    check_device_f32(op, "gate", *args.gate);
    check_device_f32(op, "x", *args.x);
    check_device_f32(op, "h", h);
    check_device_rows(op, "up", *args.up);
    if (!codec_supported(args.up->type)) {
        throw UnsupportedError(cat(op, ": up ", type_traits(args.up->type).name, " is not supported on the CUDA backend"));
    }
    check_activation(op, args.act);
    Impl& s = *impl_;
    const OpScope timed = s.time_op(op);
    const int64_t n_ff = args.gate->ne[0], n = args.x->n_rows();
    const SparseScratchLayout layout = sparse_scratch_layout(n_ff, 0);
    auto* buf = static_cast<uint8_t*>(s.scratch(s.sparse, layout.total, "sparse FFN scratch"));
    uint64_t* counts = sparse_counts(args, buf, op);
    auto* mask = reinterpret_cast<uint32_t*>(buf + layout.mask);
    for (int64_t t = 0; t < n; ++t) masked_up(args, t, f32_view(h.rows(t, 1)).row(0), mask, counts);
    s.forget_quantized_x();  // h may hold the bytes of an x quantized before
    if (args.counts != nullptr) return -1;
    return static_cast<int64_t>(read_kept(s, counts, op));
}

}  // namespace strata::cuda
