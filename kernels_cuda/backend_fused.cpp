// CudaBackend's fused ops (backend.h): the residual add with the next RMSNorm as one kernel
// (norm.cu), and attention's prologue (biases, per-head norms, RoPE, both KV stores) as one
// kernel (attention_prologue.cu) where the shapes and cache types allow, else the default ops.
#include "engine/core/error.h"
#include "engine/core/op_checks.h"
#include "kernels_cuda/backend_impl.h"

namespace strata::cuda {
namespace {

const float* device_vector(const char* op, const char* what, const Tensor* t) {
    if (t == nullptr) return nullptr;
    check_device_f32(op, what, *t);
    return t->as<const float>();
}

KvStoreLaunch cache_launch(const Tensor& cache) {
    KvStoreLaunch c;
    c.cache = static_cast<uint8_t*>(cache.data);
    c.nb1 = cache.nb[1];
    c.cells = cache.ne[1];
    c.type = cache.type;
    return c;
}

// Whether a cache of `type` takes rows stored in segments of `len` elements from one launch.
bool cache_takes(GgmlType type, int64_t len) {
    if (!kv_store_supported(type)) return false;
    const bool blocks = type == GgmlType::Q8_0 || type == GgmlType::Q4_0 || type == GgmlType::Q5_0;
    return !blocks || len % 32 == 0;
}

}  // namespace

void CudaBackend::add_rms_norm(Tensor& x, Tensor& delta, const Tensor* delta_weight, const Tensor* weight, float eps,
                               Tensor& y) {
    const char* op = "add_rms_norm";
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op(op);
    check_device_f32(op, "x", x);
    check_device_f32(op, "delta", delta);
    check_device_f32(op, "y", y);
    check_same_shape(op, "x", x, "delta", delta);
    check_same_shape(op, "x", x, "y", y);
    if (y.data == x.data || y.data == delta.data) throw ArgumentError(cat(op, ": y must not alias x or delta"));
    const auto row_weight = [&](const char* what, const Tensor* t) -> const float* {
        if (t == nullptr) return nullptr;
        check_device_f32(op, what, *t);
        if (t->n_elements() != x.ne[0] || !t->is_contiguous()) {
            throw ArgumentError(cat(op, ": ", what, " ", t->shape_string(), " must hold ", x.ne[0],
                                    " contiguous elements to match rows of x ", x.shape_string()));
        }
        return t->as<const float>();
    };
    const float* w = row_weight("weight", weight);
    const float* dw = row_weight("delta weight", delta_weight);
    if (!(eps >= 0.0f)) throw ArgumentError(cat(op, ": eps = ", eps, ", expected >= 0"));
    Impl& s = *impl_;
    const Impl::Q8Scratch q8 = s.fuse_q8(y) ? s.q8_scratch(y.n_rows(), y.ne[0]) : Impl::Q8Scratch{nullptr, nullptr, nullptr};
    if (cuda::rms_norm(f32_view(x), w, eps, f32_view(y), q8.xq, q8.xds, s.stream, f32_view(delta), dw)) {
        s.quantized_x = Impl::QuantizedX{true, y.data, y.ne, y.nb, q8.buf};
    }
}

void CudaBackend::attention_prologue(const AttentionPrologueArgs& a) {
    const char* op = "attention_prologue";
    check_attention_prologue(op, a);
    const int64_t hd = a.q.ne[0], n = a.q.ne[2];
    const bool store = a.k_cache != nullptr;
    if (hd > kPrologueMaxHeadDim ||
        (store && (!cache_takes(a.k_cache->type, hd) || !cache_takes(a.v_cache->type, a.v.ne[0])))) {
        Backend::attention_prologue(a);  // the ops one by one (and their errors)
        return;
    }
    impl_->forget_quantized_x();
    const OpScope timed = impl_->time_op(op);
    check_device_f32(op, "q", a.q);
    check_device_f32(op, "k", a.k);
    check_device_f32(op, "v", a.v);
    PrologueLaunch l;
    l.q = f32_view(Tensor::contiguous(GgmlType::F32, a.q.data, {hd, a.q.ne[1] * n}, a.q.memory));
    l.k = f32_view(Tensor::contiguous(GgmlType::F32, a.k.data, {hd, a.k.ne[1] * n}, a.k.memory));
    l.v = f32_view(a.v);
    l.head_dim = hd;
    l.n_head = a.q.ne[1];
    l.n_head_kv = a.k.ne[1];
    l.n_tokens = n;
    l.q_bias = device_vector(op, "q bias", a.q_bias);
    l.k_bias = device_vector(op, "k bias", a.k_bias);
    l.v_bias = device_vector(op, "v bias", a.v_bias);
    l.q_norm = device_vector(op, "q norm", a.q_norm);
    l.k_norm = device_vector(op, "k norm", a.k_norm);
    l.eps = a.eps;
    l.rope = impl_->rope_launch(a.positions, n, hd, a.rope);
    if (store) {
        check_device_rows(op, "k cache", *a.k_cache);
        check_device_rows(op, "v cache", *a.v_cache);
        l.store = true;
        l.k_cache = cache_launch(*a.k_cache);
        l.v_cache = cache_launch(*a.v_cache);
        l.first_cell = a.first_cell;
        l.first_dev = impl_->step_cell(a.first_cell, n);
    }
    cuda::attention_prologue(l, impl_->stream);
}

}  // namespace strata::cuda
