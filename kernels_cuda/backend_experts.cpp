// CudaBackend::expert_ffn: a decode token's experts on the device in six launches, however many
// there are: x quantized once (or reused), the gates and the ups as two batched GEMVs (one
// column per expert), the activation writing h quantized per expert, the downs as one batched
// GEMV, and their weighted sum added to y (combine_rows). Experts whose types or width differ
// from the first's, or whose types lack a dp4a kernel, run as separate products in the same call.
// CudaBackend::routed_expert_ffn: the same launches after a routing kernel, reading the chosen
// experts' matrices from a device table by the ids it wrote, so the host never waits for them.
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
bool batchable(std::span<const ExpertRef> experts, int64_t n_embd, const CudaBackendOptions& options) {
    const ExpertRef& first = experts[0];
    const int64_t width = first.gate->ne[1];
    if (!options.quantize_activations || n_embd % 32 != 0 || width % 32 != 0) return false;
    for (const Tensor* t : {first.gate, first.up, first.down})
        if (!gemv_q8_supported(t->type)) return false;
    return std::all_of(experts.begin(), experts.end(), [&](const ExpertRef& e) {
        return e.gate->type == first.gate->type && e.up->type == first.up->type && e.down->type == first.down->type &&
               e.gate->ne[1] == width && e.gate->nb[1] == first.gate->nb[1] && e.up->nb[1] == first.up->nb[1] &&
               e.down->nb[1] == first.down->nb[1];
    });
}

// The experts of one batched call and where each launch finds expert j's matrices: the
// caller's (given), or, routed, table[which * n_expert + ids[j]] on the device (the ids a
// routing kernel wrote; `which` 0, 1, 2 for gate, up, down).
struct BatchedExperts {
    const ExpertRef* first = nullptr;  // every expert's types, width and strides
    int64_t n_e = 0;
    std::span<const ExpertRef> given;
    const int32_t* ids = nullptr;
    const uint8_t* const* table = nullptr;
    int64_t n_expert = 0;

    void point(GemvBatch& b, int which, int64_t j0, int count) const {
        if (ids != nullptr) {
            b.ids = ids + j0;
            b.table = table + which * n_expert;
            return;
        }
        for (int j = 0; j < count; ++j) {
            const ExpertRef& e = given[static_cast<size_t>(j0 + j)];
            const Tensor* t = which == 0 ? e.gate : (which == 1 ? e.up : e.down);
            b.w[j] = static_cast<const uint8_t*>(t->data);
        }
    }
};

// The scratch of one call: gate and up [width, n_e], the experts' outputs [n_embd, n_e].
struct ExpertBufs {
    float* gate;
    float* up;
    float* out;
};

// Into b: gate_j · x and up_j · x, h_j = act(gate_j · x) ⊙ up_j · x quantized per expert, and
// out_j = down_j · h_j, in batched launches of at most kGemvBatchMax experts.
void queue_batched(Impl& s, const Tensor& x, Activation act, const BatchedExperts& ex, const ExpertBufs& b) {
    const ExpertRef& first = *ex.first;
    const int64_t n_e = ex.n_e;
    const int64_t n_embd = x.ne[0], width = first.gate->ne[1];
    const Impl::Q8Scratch q8x = s.quantized(x);  // the router's input norm may have left it quantized
    const int r_in = s.gemv_rows_per_warp(width * n_e);
    for (int64_t j0 = 0; j0 < n_e; j0 += kGemvBatchMax) {
        const int count = static_cast<int>(std::min<int64_t>(kGemvBatchMax, n_e - j0));
        GemvBatch gates, ups;
        ex.point(gates, 0, j0, count);
        ex.point(ups, 1, j0, count);
        for (int j = 0; j < count; ++j) {
            gates.y[j] = b.gate + (j0 + j) * width;
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
    gated_activation(f32_view(gates), f32_view(ups), act, f32_view(gates), q8h.xq, q8h.xds, s.stream);
    const int r_out = s.gemv_rows_per_warp(n_embd * n_e);
    for (int64_t j0 = 0; j0 < n_e; j0 += kGemvBatchMax) {
        const int count = static_cast<int>(std::min<int64_t>(kGemvBatchMax, n_e - j0));
        GemvBatch downs;
        ex.point(downs, 2, j0, count);
        for (int j = 0; j < count; ++j) {
            downs.y[j] = b.out + (j0 + j) * n_embd;
            downs.x_row[j] = static_cast<int32_t>(j0 + j);
        }
        gemv_q8_batch(first.down->type, downs, count, first.down->nb[1], width, n_embd, q8h.xq, q8h.xds, r_out, s.stream);
    }
}

// The device table of a layer's expert matrices (gates, ups, downs; 3·n_expert pointers), made
// once per distinct set and kept: step graphs name it. While a graph records, a set not made
// yet goes with the recording's arguments instead (no copy can be recorded).
const uint8_t* const* expert_table(Impl& s, std::span<const ExpertRef> experts) {
    std::vector<const void*> key;
    key.reserve(3 * experts.size());
    for (int which = 0; which < 3; ++which)
        for (const ExpertRef& e : experts) key.push_back((which == 0 ? e.gate : (which == 1 ? e.up : e.down))->data);
    if (const auto it = s.expert_tables.find(key); it != s.expert_tables.end()) {
        return static_cast<const uint8_t* const*>(it->second.data());
    }
    const size_t bytes = key.size() * sizeof(void*);
    if (s.capturing || s.expert_tables.size() >= Impl::kMaxExpertTables) {
        return static_cast<const uint8_t* const*>(s.stage_bytes(key.data(), bytes));
    }
    ArenaBuffer dev(s.arena, bytes, "expert table");
    CUDA_CHECK(cudaMemcpyAsync(dev.data(), key.data(), bytes, cudaMemcpyHostToDevice, s.stream));
    CUDA_CHECK(cudaStreamSynchronize(s.stream));  // once per table: the copy reads pageable memory
    const auto placed = s.expert_tables.emplace(std::move(key), std::move(dev)).first;
    return static_cast<const uint8_t* const*>(placed->second.data());
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

    if (batchable(ex, n_embd, s.options)) {
        const OpScope timed = s.time_op(op);
        queue_batched(s, x, args.act, BatchedExperts{&ex[0], n_e, ex}, b);
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


bool CudaBackend::routes_experts(std::span<const ExpertRef> experts, int64_t n_used, Activation act) const {
    const auto n_expert = static_cast<int64_t>(experts.size());
    if (n_used < 1 || n_used > n_expert || n_expert > kRouteMaxExperts) return false;
    if (act != Activation::Silu && act != Activation::GeluTanh) return false;
    for (const ExpertRef& e : experts)
        for (const Tensor* t : {e.gate, e.up, e.down})
            if (t == nullptr || t->memory != MemoryKind::Device) return false;
    return batchable(experts, experts[0].gate->ne[0], impl_->options);
}

void CudaBackend::routed_expert_ffn(const RoutedExpertFfnArgs& args, Tensor& y) {
    const char* op = "routed_expert_ffn";
    check_routed_expert_ffn_shapes(op, args, y);
    check_args(op, {args.x, args.experts, args.act}, y);
    check_device_f32(op, "logits", *args.logits);
    if (!routes_experts(args.experts, args.top_k.n_used, args.act)) {
        throw UnsupportedError(cat(op, ": these experts' types or shapes are not routed on the CUDA backend"));
    }
    Impl& s = *impl_;
    const ExpertRef& first = args.experts[0];
    const Tensor& x = *args.x;
    const int64_t n_embd = x.ne[0], width = first.gate->ne[1], k = args.top_k.n_used;
    const auto n_expert = static_cast<int64_t>(args.experts.size());
    // gate and up [width, k], the outputs [n_embd, k], the weights [k], the ids [k]; in the
    // cuBLAS path's weight tile, which no op uses across calls.
    const auto floats = static_cast<uint64_t>((2 * width + n_embd + 2) * k);
    auto* buf = static_cast<float*>(s.scratch(s.w_tile, floats * sizeof(float), "expert_ffn scratch"));
    const ExpertBufs b{buf, buf + width * k, buf + 2 * width * k};
    float* weights = b.out + n_embd * k;
    auto* ids = reinterpret_cast<int32_t*>(weights + k);

    const OpScope timed = s.time_op(op);
    route_experts_top_k(static_cast<const float*>(args.logits->data), n_expert, args.top_k, ids, weights, s.stream);
    const uint8_t* const* table = expert_table(s, args.experts);
    queue_batched(s, x, args.act, BatchedExperts{&first, k, {}, ids, table, n_expert}, b);
    s.forget_quantized_x();  // y changes below
    // y = Σ_j weight_j · out_j
    std::vector<int32_t> rows(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) rows[static_cast<size_t>(j)] = static_cast<int32_t>(j);
    const int32_t offsets[2] = {0, static_cast<int32_t>(k)};
    const Tensor outs = Tensor::contiguous(GgmlType::F32, b.out, {n_embd, k}, MemoryKind::Device);
    cuda::combine_rows(f32_view(outs), s.stage(offsets, 2), s.stage(rows.data(), k), weights, f32_view(y),
                       false, s.stream);
}

}  // namespace strata::cuda
