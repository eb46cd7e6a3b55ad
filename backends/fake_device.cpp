// The fake device (fake_device.h).
#include "backends/fake_device.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "engine/core/device_scratch.h"
#include "engine/core/error.h"
#include "engine/core/op_checks.h"
#include "engine/core/sparse_scratch.h"

namespace strata {

FakeDeviceBackend::FakeDeviceBackend(const FakeDeviceOptions& options)
    : budget_(options.budget_bytes),
      cpu_(cpu::CpuBackendOptions{options.n_threads, options.quantize_activations}) {
    capabilities_.device_name = "fake-gpu";
    capabilities_.weight_types = cpu_.capabilities().weight_types;
    capabilities_.sparse_ffn = true;
    capabilities_.sparse_activation = true;  // as CUDA's
    capabilities_.expert_ffn = true;  // as CUDA's
    capabilities_.op_scratch_bytes = kDeviceOpScratchBytes;  // as CUDA's: budgets tested here hold there
    capabilities_.step_graphs = options.step_graphs;
}

BackendMemory FakeDeviceBackend::memory() const {
    const FakeDeviceStats s = stats();
    BackendMemory m;
    m.total_bytes = m.budget_bytes = m.limit_bytes = budget_;
    m.free_bytes = budget_ - s.used_bytes;
    m.used_bytes = s.used_bytes;
    m.peak_bytes = s.peak_bytes;
    return m;
}

Buffer FakeDeviceBackend::allocate(uint64_t bytes, std::string_view what) {
    constexpr uint64_t kAlign = 256;
    const uint64_t rounded = (std::max<uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    std::lock_guard lock(mutex_);
    if (stats_.used_bytes + rounded > budget_) {
        throw BudgetError(cat("fake device: ", what, " needs ", rounded, " bytes; ", stats_.used_bytes,
                              " of the ", budget_, "-byte budget are in use"));
    }
    void* p = std::aligned_alloc(kAlign, rounded);
    if (p == nullptr) throw BudgetError(cat("fake device: host allocation of ", rounded, " bytes failed"));
    blocks_[reinterpret_cast<uintptr_t>(p)] = rounded;
    stats_.used_bytes += rounded;
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.used_bytes);
    return Buffer(p, bytes, MemoryKind::Device, [this](void* q, uint64_t) {
        std::lock_guard inner_lock(mutex_);
        auto it = blocks_.find(reinterpret_cast<uintptr_t>(q));
        STRATA_INVARIANT(it != blocks_.end());
        stats_.used_bytes -= it->second;
        blocks_.erase(it);
        std::free(q);
    });
}

bool FakeDeviceBackend::owns(const void* p, uint64_t bytes) const {
    const auto a = reinterpret_cast<uintptr_t>(p);
    std::lock_guard lock(mutex_);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return false;
    --it;
    return a + bytes <= it->first + it->second;
}

Tensor FakeDeviceBackend::inner(const Tensor& t, std::string_view op) const {
    uint64_t span = 0;  // bytes from data to the end of the last row
    if (t.n_elements() > 0) {
        span = t.row_bytes();
        for (int d = 1; d < 4; ++d) span += t.nb[d] * static_cast<uint64_t>(t.ne[d] - 1);
    }
    if (t.memory != MemoryKind::Device || !owns(t.data, std::max<uint64_t>(span, 1))) {
        throw ArgumentError(cat(op, ": ", t.shape_string(), " is not in the fake device's memory"));
    }
    Tensor h = t;
    h.memory = MemoryKind::Host;
    return h;
}

void FakeDeviceBackend::copy_in(const Tensor& src, Tensor& dst) {
    if (src.memory == MemoryKind::Device) throw ArgumentError("fake device copy_in: the source is device memory");
    refuse_while_recording("copy_in");
    Tensor d = inner(dst, "copy_in");
    copy_host_tensor(src, d);
    std::lock_guard lock(mutex_);
    stats_.bytes_in += d.n_bytes();
    ++stats_.copies_in;
}

void FakeDeviceBackend::copy_out(const Tensor& src, Tensor& dst) {
    if (dst.memory == MemoryKind::Device) throw ArgumentError("fake device copy_out: the destination is device memory");
    refuse_while_recording("copy_out");
    copy_host_tensor(inner(src, "copy_out"), dst);
    std::lock_guard lock(mutex_);
    stats_.bytes_out += dst.n_bytes();
    ++stats_.copies_out;
}

FakeDeviceStats FakeDeviceBackend::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void FakeDeviceBackend::scratch(Buffer& buf, uint64_t bytes, std::string_view what) {
    if (buf.size() < bytes) {
        buf.reset();
        buf = allocate(bytes, what);
    }
}

// The CUDA backend's matmul scratch, held the same way (grown on demand, never shrunk), so that a
// budget that leaves no room for it fails here as it does on a GPU (kernels_cuda/backend_matmul.cpp).
void FakeDeviceBackend::matmul_scratch(const Tensor& w, int64_t m) {
    const int64_t k = w.ne[0], n = w.ne[1];
    if (w.type == GgmlType::F32 || n == 0 || m == 0) return;
    if (m <= kCudaGemvMaxTokens) {
        const uint64_t ds_offset = (static_cast<uint64_t>(m * k) + 15) / 16 * 16;
        scratch(x_q8_, ds_offset + static_cast<uint64_t>(m * (k / 32)) * 2 * sizeof(float), "matmul q8 activations");
        return;
    }
    scratch(x_f16_, static_cast<uint64_t>(m * k) * 2, "matmul f16 activations");
    if (w.type == GgmlType::F16) return;
    const uint64_t row_f16 = static_cast<uint64_t>(k) * 2;
    int64_t tile_rows = static_cast<int64_t>(kCudaGemmTileBytes / row_f16);
    tile_rows = std::min(std::max<int64_t>(kCudaTileRowAlign, tile_rows / kCudaTileRowAlign * kCudaTileRowAlign), n);
    scratch(w_tile_, static_cast<uint64_t>(tile_rows) * row_f16, "matmul f16 weight tile");
}

// Each op runs through run(): at once, and again at each replay of a step graph recording it
// (its tensors captured by value: views of the pool, checked again when it runs).
void FakeDeviceBackend::matmul(const Tensor& w, const Tensor& x, Tensor& y) {
    run([this, w, x, y] {
        Tensor yi = inner(y, "matmul");
        const Tensor wi = inner(w, "matmul"), xi = inner(x, "matmul");
        matmul_scratch(w, x.n_rows());
        cpu_.matmul(wi, xi, yi);
    });
}

void FakeDeviceBackend::get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out) {
    const int32_t* arg = ids_arg(ids, n);
    run([this, table, arg, n, out] {
        Tensor o = inner(out, "get_rows");
        cpu_.get_rows(inner(table, "get_rows"), arg, n, o);
    });
}

void FakeDeviceBackend::rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y) {
    const bool has_weight = weight != nullptr;
    const Tensor w = has_weight ? *weight : Tensor{};
    run([this, x, has_weight, w, eps, y] {
        Tensor yi = inner(y, "rms_norm");
        if (has_weight) {
            Tensor wi = inner(w, "rms_norm");
            cpu_.rms_norm(inner(x, "rms_norm"), &wi, eps, yi);
        } else {
            cpu_.rms_norm(inner(x, "rms_norm"), nullptr, eps, yi);
        }
    });
}

void FakeDeviceBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
    run([this, a, b, y] {
        Tensor yi = inner(y, "add");
        cpu_.add(inner(a, "add"), inner(b, "add"), yi);
    });
}

void FakeDeviceBackend::scale(Tensor& x, float s) {
    run([this, x, s] {
        Tensor xi = inner(x, "scale");
        cpu_.scale(xi, s);
    });
}

void FakeDeviceBackend::combine_rows(const Tensor& x, const RowCombine& c, Tensor& y) {
    not_recorded("combine_rows");
    Tensor yi = inner(y, "combine_rows");
    cpu_.combine_rows(inner(x, "combine_rows"), c, yi);
}

void FakeDeviceBackend::gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y) {
    run([this, gate, up, act, y] {
        Tensor yi = inner(y, "gated_activation");
        cpu_.gated_activation(inner(gate, "gated_activation"), inner(up, "gated_activation"), act, yi);
    });
}

void FakeDeviceBackend::rope(Tensor& x, const int32_t* positions, const RopeParams& params) {
    const int32_t* arg = ids_arg(positions, x.ne[2]);
    run([this, x, arg, params] {
        Tensor xi = inner(x, "rope");
        cpu_.rope(xi, arg, params);
    });
}

void FakeDeviceBackend::kv_store(const Tensor& src, Tensor& cache, int64_t first_cell) {
    const bool at_slot = at_step_position(first_cell, src.ne[1]);
    run([this, src, cache, first_cell, at_slot] {
        Tensor c = inner(cache, "kv_store");
        cpu_.kv_store(inner(src, "kv_store"), c, at_slot ? slot_[1] : first_cell);
    });
}

void FakeDeviceBackend::attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  int64_t n_cells, const int32_t* positions, const AttentionParams& params,
                                  Tensor& out) {
    // A recorded step's attention covers the cells up to its position, wherever that is.
    const bool at_slot = recording_ != nullptr && positions == position_host_ && q.ne[2] == 1;
    const int64_t past_position = n_cells - slot_[1];
    const int32_t* arg = ids_arg(positions, q.ne[2]);
    run([this, q, k_cache, v_cache, n_cells, at_slot, past_position, arg, params, out] {
        Tensor o = inner(out, "attention");
        cpu_.attention(inner(q, "attention"), inner(k_cache, "attention"), inner(v_cache, "attention"),
                       at_slot ? slot_[1] + past_position : n_cells, arg, params, o);
    });
}

void FakeDeviceBackend::softcap(Tensor& x, float cap) {
    run([this, x, cap] {
        Tensor xi = inner(x, "softcap");
        cpu_.softcap(xi, cap);
    });
}

// The CUDA ops' scratch (kernels_cuda/backend_sparse.cpp): the sparse block for both ops, and
// for the sparse FFN the q8 activations of one row of x (its up rows' GEMV).
int64_t FakeDeviceBackend::thresholded_gated_activation(const Tensor& gate, const Tensor& up, Activation act,
                                                        float threshold, Tensor& y) {
    const char* op = "thresholded_gated_activation";
    not_recorded(op);
    Tensor yi = inner(y, op);
    scratch(sparse_, sparse_scratch_layout(0, 0).total, "sparse FFN scratch");
    return cpu_.thresholded_gated_activation(inner(gate, op), inner(up, op), act, threshold, yi);
}

int64_t FakeDeviceBackend::sparse_gated_ffn(const SparseFfnArgs& args, Tensor& y) {
    const char* op = "sparse_gated_ffn";
    not_recorded(op);
    if (!args.gate || !args.x || !args.up || !args.down_t) throw ArgumentError(cat(op, ": a tensor argument is null"));
    if (args.counts != nullptr && !owns(args.counts, 2 * sizeof(uint64_t))) {
        throw ArgumentError(cat(op, ": counts must be two u64 in the fake device's memory"));
    }
    const Tensor gate = inner(*args.gate, op), x = inner(*args.x, op), up = inner(*args.up, op),
                 down_t = inner(*args.down_t, op);
    Tensor yi = inner(y, op);
    scratch(sparse_, sparse_scratch_layout(gate.ne[0], x.ne[0]).total, "sparse FFN scratch");
    if (cpu_.quantize_activations()) matmul_scratch(up, 1);  // as its matmul: the q8 x of decode
    SparseFfnArgs host = args;
    host.gate = &gate;
    host.x = &x;
    host.up = &up;
    host.down_t = &down_t;
    return cpu_.sparse_gated_ffn(host, yi);
}

int64_t FakeDeviceBackend::sparse_gated_activation(const SparseFfnArgs& args, Tensor& h) {
    const char* op = "sparse_gated_activation";
    not_recorded(op);
    if (!args.gate || !args.x || !args.up) throw ArgumentError(cat(op, ": gate, x or up is null"));
    if (args.counts != nullptr && !owns(args.counts, 2 * sizeof(uint64_t))) {
        throw ArgumentError(cat(op, ": counts must be two u64 in the fake device's memory"));
    }
    const Tensor gate = inner(*args.gate, op), x = inner(*args.x, op), up = inner(*args.up, op);
    Tensor hi = inner(h, op);
    scratch(sparse_, sparse_scratch_layout(gate.ne[0], 0).total, "sparse FFN scratch");
    if (cpu_.quantize_activations()) matmul_scratch(up, 1);  // as its matmul: the q8 x of decode
    SparseFfnArgs host = args;
    host.gate = &gate;
    host.x = &x;
    host.up = &up;
    return cpu_.sparse_gated_activation(host, hi);
}

void FakeDeviceBackend::expert_ffn(const ExpertFfnArgs& args, Tensor& y) {
    const char* op = "expert_ffn";
    not_recorded(op);
    check_expert_ffn_shapes(op, args, y);
    std::vector<Tensor> mats;  // the experts' matrices as host views (each checked to be ours)
    mats.reserve(3 * args.experts.size());
    for (const ExpertRef& e : args.experts)
        for (const Tensor* t : {e.gate, e.up, e.down}) mats.push_back(inner(*t, op));
    std::vector<ExpertRef> experts;
    for (size_t j = 0; j < args.experts.size(); ++j)
        experts.push_back({&mats[3 * j], &mats[3 * j + 1], &mats[3 * j + 2], args.experts[j].weight});
    const Tensor x = inner(*args.x, op);
    Tensor yi = inner(y, op);
    cpu_.expert_ffn({&x, experts, args.act}, yi);
}

bool FakeDeviceBackend::routes_experts(std::span<const ExpertRef> experts, int64_t n_used, Activation act) const {
    const auto n_expert = static_cast<int64_t>(experts.size());
    if (n_used < 1 || n_used > n_expert || n_expert > kCudaRouteMaxExperts) return false;
    if (act != Activation::Silu && act != Activation::GeluTanh) return false;
    const ExpertRef& first = experts[0];
    const int64_t n_embd = first.gate->ne[0], width = first.gate->ne[1];
    if (n_embd % 32 != 0 || width % 32 != 0 || !cpu_.quantize_activations()) return false;
    for (const Tensor* t : {first.gate, first.up, first.down})
        if (!type_traits(t->type).is_quantized) return false;
    return std::all_of(experts.begin(), experts.end(), [&](const ExpertRef& e) {
        return e.gate->type == first.gate->type && e.up->type == first.up->type && e.down->type == first.down->type &&
               e.gate->ne[1] == width;
    });
}

void FakeDeviceBackend::routed_expert_ffn(const RoutedExpertFfnArgs& args, Tensor& y) {
    const char* op = "routed_expert_ffn";
    check_routed_expert_ffn_shapes(op, args, y);
    if (!routes_experts(args.experts, args.top_k.n_used, args.act)) {
        throw UnsupportedError(cat(op, ": these experts' types or shapes are not routed on the device"));
    }
    // The matrices' views, kept with a recording (it replays them).
    auto mats = std::make_shared<std::vector<Tensor>>();
    mats->reserve(3 * args.experts.size());
    for (const ExpertRef& e : args.experts)
        for (const Tensor* t : {e.gate, e.up, e.down}) mats->push_back(*t);
    const Tensor x = *args.x, logits = *args.logits;
    const ExpertTopK top_k = args.top_k;
    const Activation act = args.act;
    run([this, mats, x, logits, top_k, act, y] {
        std::vector<Tensor> host;  // checked to be ours at each run
        host.reserve(mats->size());
        for (const Tensor& t : *mats) host.push_back(inner(t, "routed_expert_ffn"));
        std::vector<ExpertRef> experts;
        for (size_t j = 0; j < host.size(); j += 3) experts.push_back({&host[j], &host[j + 1], &host[j + 2], 0.0f});
        const Tensor xi = inner(x, "routed_expert_ffn"), li = inner(logits, "routed_expert_ffn");
        Tensor yi = inner(y, "routed_expert_ffn");
        cpu_.routed_expert_ffn({&xi, &li, experts, top_k, act}, yi);
    });
}

}  // namespace strata
