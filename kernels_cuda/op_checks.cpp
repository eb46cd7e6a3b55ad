// Argument checks of the CUDA ops (backend_impl.h): the CPU backend's rules, for device tensors.
#include "engine/core/error.h"
#include "engine/core/op_checks.h"
#include "kernels_cuda/backend_impl.h"

namespace strata::cuda {

void check_device_rows(std::string_view op, std::string_view what, const Tensor& t) {
    if (t.data == nullptr) throw ArgumentError(cat(op, ": ", what, " has no data"));
    if (t.memory != MemoryKind::Device) {
        throw ArgumentError(cat(op, ": ", what, " ", t.shape_string(),
                                " is not in device memory; upload it to the CUDA backend first"));
    }
    const TypeTraits& traits = type_traits(t.type);
    for (int d = 0; d < 4; ++d) {
        if (t.ne[d] < 0) throw ArgumentError(cat(op, ": ", what, " has ne[", d, "] = ", t.ne[d]));
    }
    if (t.ne[0] % traits.block_size != 0 || t.nb[0] != traits.type_size) {
        throw ArgumentError(cat(op, ": ", what, " ", t.shape_string(),
                                " needs contiguous rows of whole blocks (nb[0] = ", t.nb[0],
                                ", block of ", traits.block_size, " elements in ", traits.type_size,
                                " bytes)"));
    }
}

void check_device_f32(std::string_view op, std::string_view what, const Tensor& t) {
    if (t.type != GgmlType::F32) {
        throw ArgumentError(cat(op, ": ", what, " must be f32, got ", t.shape_string()));
    }
    check_device_rows(op, what, t);
    if (t.nb[1] % 4 != 0 || t.nb[2] % 4 != 0 || t.nb[3] % 4 != 0) {
        throw ArgumentError(cat(op, ": ", what, " ", t.shape_string(), " has row strides (", t.nb[1],
                                ", ", t.nb[2], ", ", t.nb[3], ") that are not whole floats"));
    }
}

bool rows_evenly_strided(const Tensor& t) {
    return (t.ne[2] == 1 || t.nb[2] == t.nb[1] * static_cast<uint64_t>(t.ne[1])) &&
           (t.ne[3] == 1 || t.nb[3] == t.nb[2] * static_cast<uint64_t>(t.ne[2]));
}

bool caches_alike(const Tensor& a, const Tensor& first) {
    return a.type == first.type && a.ne[0] == first.ne[0] && a.ne[1] == first.ne[1] && a.nb[1] == first.nb[1] &&
           reinterpret_cast<uintptr_t>(a.data) % 16 == reinterpret_cast<uintptr_t>(first.data) % 16;
}

void check_matmul(const Tensor& w, const Tensor& x, const Tensor& y) {
    check_device_rows("matmul", "W", w);
    check_device_f32("matmul", "x", x);
    check_device_f32("matmul", "y", y);
    if (w.ne[2] != 1 || w.ne[3] != 1) {
        throw ArgumentError(cat("matmul: W must be 2-D [k, n], got ", w.shape_string()));
    }
    if (x.ne[0] != w.ne[0]) {
        throw ArgumentError(cat("matmul: x ", x.shape_string(), " must have k = ", w.ne[0],
                                " elements per row to match W ", w.shape_string()));
    }
    if (y.ne[0] != w.ne[1] || y.ne[1] != x.ne[1] || y.ne[2] != x.ne[2] || y.ne[3] != x.ne[3]) {
        throw ArgumentError(cat("matmul: y ", y.shape_string(), " must be [", w.ne[1],
                                ", rows of x] for W ", w.shape_string(), " and x ", x.shape_string()));
    }
    if (!rows_evenly_strided(x) || !rows_evenly_strided(y)) {
        throw ArgumentError(cat("matmul: the rows of x ", x.shape_string(), " and y ",
                                y.shape_string(), " must be evenly strided on the CUDA backend"));
    }
}

void check_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                     const int32_t* positions, const AttentionParams& p, const Tensor& out) {
    check_attention_params(p);
    if (p.head_dim_k > kAttnMaxHeadDim || p.head_dim_v > kAttnMaxHeadDim) {
        throw UnsupportedError(cat("attention: head dims ", p.head_dim_k, "/", p.head_dim_v,
                                   " exceed the CUDA kernels' ", kAttnMaxHeadDim));
    }
    check_device_f32("attention", "q", q);
    check_device_f32("attention", "out", out);
    check_device_rows("attention", "k_cache", k_cache);
    check_device_rows("attention", "v_cache", v_cache);
    for (const Tensor* c : {&k_cache, &v_cache}) {
        if (!attention_cache_supported(c->type)) {
            throw UnsupportedError(cat("attention: cache type ", type_traits(c->type).name,
                                       " is not supported on the CUDA backend (f32, f16, bf16, "
                                       "q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl are)"));
        }
    }
    check_attention_shapes(q, k_cache, v_cache, n_cells, positions, p, out);
}

}  // namespace strata::cuda
