// Where the forward pass's ops run (layer_executor.h): backends, crossings, prefill shipping,
// DISK streaming, split FFN parts and step graphs.
#include "engine/runtime/layer_executor.h"

#include <algorithm>
#include <array>

#include "engine/core/env_switch.h"
#include "engine/core/error.h"
#include "engine/core/layer_ops.h"
#include "engine/core/timing.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program_moe.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"

namespace strata {
namespace {

uint64_t weight_bytes(const PlacedWeight& w) { return w.tensor.row_bytes() * static_cast<uint64_t>(w.tensor.n_rows()); }

// The matrix a described product reads (engine/core/layer_ops.h) in a layer's attention block,
// or in one part of its dense FFN.
const PlacedWeight& product_weight(const PlacedLayer& l, const FfnPart* part, TensorRole w) {
    switch (w) {
        case TensorRole::AttnQ: return l.attn_q;
        case TensorRole::AttnK: return l.attn_k;
        case TensorRole::AttnV: return l.attn_v;
        case TensorRole::AttnOutput: return l.attn_output;
        case TensorRole::FfnGate: if (part != nullptr) return part->gate; break;
        case TensorRole::FfnUp: if (part != nullptr) return part->up; break;
        case TensorRole::FfnDown: if (part != nullptr) return part->down; break;
        default: break;
    }
    invariant_failed("every described product has a placed matrix", __FILE__, __LINE__);
}

// fn(const PlacedWeight&) for every matrix of a layer's attention and dense FFN, in the order
// the blocks' descriptions multiply them (an FFN part's three together, part by part).
template <typename Fn>
void for_each_product(const PlacedLayer& l, Fn&& fn) {
    for (const LayerOp& op : attention_block_ops())
        if (op.kind == LayerOpKind::Product) fn(product_weight(l, nullptr, op.weight));
    for (const FfnPart& p : l.ffn)
        for (const LayerOp& op : ffn_block_ops())
            if (op.kind == LayerOpKind::Product) fn(product_weight(l, &p, op.weight));
}

// Every weight of the layers on the GPU (and not streamed), every attention's KV there, and
// every MoE layer routed there (moe_routes_on: else its routing reads logits on the host): a
// decode step may run as one graph.
bool all_on(const PlacedModel& model, const Backend* g) {
    const MoeConfig& moe = model.model().config().moe;
    const Activation act = model.model().config().activation;
    bool all = true;
    auto on_gpu = [&](const PlacedWeight& w) { all = all && (!w.present() || (w.backend == g && w.stream_id < 0)); };
    on_gpu(model.token_embd());
    on_gpu(model.output());
    for (int il = 0; il < model.n_layer(); ++il) {
        const PlacedLayer& l = model.layer(il);
        all = all && l.attn_home == g && (l.moe.experts.empty() || moe_routes_on(l.moe, *g, moe.n_expert_used, act));
        for_each_product(l, on_gpu);
    }
    return all;
}

}  // namespace

LayerExecutor::LayerExecutor(const PlacedModel& model, int64_t gpu_prefill_min_tokens, uint64_t gpu_staging_limit)
    : model_(model),
      n_embd_(model.model().config().n_embd),
      gpu_prefill_min_tokens_(gpu_prefill_min_tokens),
      gpu_staging_limit_(gpu_staging_limit) {
    if (static_cast<int>(model.backends().size()) > kMaxBackends) {
        throw UnsupportedError(cat("the executor runs on at most ", kMaxBackends, " backends"));
    }
    for (size_t i = 0; i < model.backends().size(); ++i)
        if (!is_host(*model.backends()[i])) gpu_ = static_cast<int>(i);
    if (gpu_ >= 0) all_on_gpu_ = all_on(model, model.backends()[static_cast<size_t>(gpu_)]);
}

Backend& LayerExecutor::backend(int bi) const { return *model_.backends()[static_cast<size_t>(bi)]; }

int LayerExecutor::index_of(const Backend* b) const {
    const int i = model_.backend_index(b);
    STRATA_INVARIANT(i >= 0);
    return i;
}

int LayerExecutor::compute_backend(const PlacedWeight& w, int64_t n) const {
    if (gpu_ >= 0 && shipping_ok_ && gpu_prefill_min_tokens_ > 0 && n >= gpu_prefill_min_tokens_ &&
        is_host(*w.backend) && weight_bytes(w) <= ship_[0].size()) {
        return gpu_;
    }
    return index_of(w.backend);
}

int LayerExecutor::part_backend(const FfnPart& p, int64_t n) const {
    // A part runs where all three of its matrices can: one too large to ship keeps it home.
    const int b = compute_backend(p.gate, n);
    if (b == gpu_ && (compute_backend(p.up, n) != gpu_ || compute_backend(p.down, n) != gpu_)) {
        return index_of(p.gate.backend);
    }
    return b;
}

uint64_t LayerExecutor::activation_bytes(const Backend* b) const {
    const int bi = model_.backend_index(b);
    if (bi < 0) return 0;
    uint64_t total = 0;
    for (const Buffer& buf : scratch_[static_cast<size_t>(bi)]) total += buf.size();
    return total;
}

Tensor LayerExecutor::act(int bi, Slot slot, int64_t ne0, int64_t n) {
    Buffer& buf = scratch_[static_cast<size_t>(bi)][slot];
    const uint64_t need = static_cast<uint64_t>(ne0 * n) * sizeof(float);
    if (buf.size() < need) {
        buf.reset();  // first, so the old block's bytes count toward the new one
        buf = backend(bi).allocate(need, "activations");
        ++act_epoch_;
    }
    return buf.tensor(GgmlType::F32, {ne0, n});
}

void LayerExecutor::transfer(int from, const Tensor& src, int to, Tensor& dst) {
    STRATA_INVARIANT(from != to);
    Backend& a = backend(from);
    Backend& b = backend(to);
    if (is_host(a)) {
        b.copy_in(src, dst);
    } else if (is_host(b)) {
        a.copy_out(src, dst);
    } else {
        bounce_.resize(static_cast<size_t>(src.n_elements()));
        Tensor host = Tensor::contiguous(GgmlType::F32, bounce_.data(), {src.ne[0], src.ne[1], src.ne[2], src.ne[3]});
        a.copy_out(src, host);
        b.copy_in(host, dst);
    }
}

const float* LayerExecutor::host_f32(int bi, const Tensor& t, std::vector<float>& buf) {
    if (is_host(backend(bi))) return t.as<const float>();
    buf.resize(static_cast<size_t>(t.n_elements()));
    Tensor host = Tensor::contiguous(GgmlType::F32, buf.data(), {t.ne[0], t.ne[1], t.ne[2], t.ne[3]});
    backend(bi).copy_out(t, host);
    return buf.data();
}

Tensor LayerExecutor::residual_on(int bi, int64_t n) {
    Tensor x = act(bi, kX, n_embd_, n);
    if (x_home_ != bi) {
        Tensor from = act(x_home_, kX, n_embd_, n);
        transfer(x_home_, from, bi, x);
        x_home_ = bi;
    }
    return x;
}

void LayerExecutor::matmul_local(const PlacedWeight& w, int bi, const Tensor& in, Tensor& out) {
    Backend& b = backend(bi);
    const bool shipped = index_of(w.backend) != bi;
    if (w.stream_id < 0 && !shipped) {
        b.matmul(w.tensor, in, out);
        return;
    }
    DiskStream* stream = w.stream_id >= 0 ? model_.disk_stream() : nullptr;
    Tensor t = w.tensor;
    if (stream != nullptr) {
        t.data = const_cast<void*>(stream->acquire(w.stream_id));
        t.memory = MemoryKind::Host;
    }
    // A shipped weight goes into the next staging slot: with two, its copy runs while the
    // previous weight is multiplied (Backend::ship_in).
    const int slot = shipped ? next_slot_ : -1;
    try {
        if (shipped) {
            const Tensor host = t;
            const uint64_t bytes = host.row_bytes() * static_cast<uint64_t>(host.n_rows());
            Buffer& into = ship_[static_cast<size_t>(slot)];
            STRATA_INVARIANT(into.size() >= bytes);
            t = Tensor::contiguous(host.type, into.data(), {host.ne[0], host.ne[1], host.ne[2], host.ne[3]},
                                   into.memory());
            next_slot_ = (next_slot_ + 1) % ship_slots_;
            const auto t0 = Clock::now();
            b.ship_in(host, t, slot);  // returns once the host bytes may be reused
            ship_stats_.seconds += seconds_since(t0);
            ship_stats_.bytes += bytes;
        }
        // A shipped weight's host bytes are free once copied; otherwise the product reads them.
        if (shipped && stream != nullptr) {
            stream->release(w.stream_id);
            stream = nullptr;
        }
        b.matmul(t, in, out);
        if (shipped) b.release_slot(slot);
        if (stream != nullptr) {
            stream->release(w.stream_id);
            stream = nullptr;
        }
    } catch (...) {
        if (stream != nullptr) stream->release(w.stream_id);
        throw;
    }
}

void LayerExecutor::matmul(const PlacedWeight& w, int home, const Tensor& in, Tensor& out) {
    const int64_t n = in.ne[1];
    const int wb = compute_backend(w, n);
    if (wb == home) {
        matmul_local(w, wb, in, out);
        return;
    }
    Tensor in_w = act(wb, kMmIn, in.ne[0], n);
    transfer(home, in, wb, in_w);
    Tensor out_w = act(wb, kMmOut, out.ne[0], n);
    matmul_local(w, wb, in_w, out_w);
    transfer(wb, out_w, home, out);
}

void LayerExecutor::matmul_many(std::span<const PlacedWeight* const> ws, int home, const Tensor& in,
                                std::span<Tensor* const> outs, bool local) {
    std::array<MatmulOut, 8> group{};
    STRATA_INVARIANT(ws.size() == outs.size() && ws.size() <= group.size());
    const int64_t n = in.ne[1];
    Backend& b = backend(home);
    const bool resident = std::all_of(ws.begin(), ws.end(), [&](const PlacedWeight* w) {
        return w->backend == &b && w->stream_id < 0 && compute_backend(*w, n) == home;
    });
    if (!resident) {
        for (size_t i = 0; i < ws.size(); ++i) {
            if (local) {
                matmul_local(*ws[i], home, in, *outs[i]);
            } else {
                matmul(*ws[i], home, in, *outs[i]);
            }
        }
        return;
    }
    for (size_t i = 0; i < ws.size(); ++i) group[i] = MatmulOut{&ws[i]->tensor, outs[i]};
    b.matmul_many(in, std::span<const MatmulOut>(group.data(), ws.size()));
}

void LayerExecutor::run_ffn_parts(std::span<const FfnPart> parts, int hb, const Tensor& cur, Tensor& proj,
                                  int64_t n, FfnPartMath& math) {
    scatter_ffn_input(parts, hb, cur, n);
    // Partial sums per backend: the home's in proj, the others' in kPart.
    BackendFlags has_sum{};
    for (const FfnPart& p : parts) {
        const int pb = part_backend(p, n);
        const Tensor in = pb == hb ? cur : act(pb, kCur, n_embd_, n);
        Tensor sum = pb == hb ? proj : act(pb, kPart, n_embd_, n);
        if (!has_sum[static_cast<size_t>(pb)]) {
            math(p, pb, in, sum);
            has_sum[static_cast<size_t>(pb)] = true;
        } else {
            Tensor tmp = act(pb, kPartTmp, n_embd_, n);
            math(p, pb, in, tmp);
            backend(pb).add(sum, tmp, sum);
        }
    }
    gather_ffn_sums(has_sum, hb, proj, n);
}

void LayerExecutor::scatter_ffn_input(std::span<const FfnPart> parts, int hb, const Tensor& cur, int64_t n) {
    BackendFlags has_input{};
    has_input[static_cast<size_t>(hb)] = true;
    for (const FfnPart& p : parts) {
        const int pb = part_backend(p, n);
        if (has_input[static_cast<size_t>(pb)]) continue;
        Tensor cur_p = act(pb, kCur, n_embd_, n);
        transfer(hb, cur, pb, cur_p);
        has_input[static_cast<size_t>(pb)] = true;
    }
}

void LayerExecutor::gather_ffn_sums(const BackendFlags& has_sum, int hb, Tensor& proj, int64_t n) {
    STRATA_INVARIANT(has_sum[static_cast<size_t>(hb)]);  // the home holds the first part
    for (int pb = 0; pb < kMaxBackends; ++pb) {
        if (pb == hb || !has_sum[static_cast<size_t>(pb)]) continue;
        Tensor part = act(pb, kPart, n_embd_, n);
        Tensor tmp = act(hb, kPartTmp, n_embd_, n);
        transfer(pb, part, hb, tmp);
        backend(hb).add(proj, tmp, proj);
    }
}

void LayerExecutor::begin_pass(int64_t n, bool stage) {
    if (stage && gpu_ >= 0 && shipping_ok_ && gpu_prefill_min_tokens_ > 0 && n >= gpu_prefill_min_tokens_ &&
        !ship_[0]) {
        allocate_staging();
    }
    x_home_ = index_of(model_.token_embd().backend);
    segment_step_.on = false;  // begin_step says whether this pass is a decode step
}

void LayerExecutor::allocate_staging() {
    // Sized for the largest host weight that fits the limit; a larger one is computed where it
    // lives (with its FFN part: part_backend).
    uint64_t largest = 0;
    auto consider = [&](const PlacedWeight& w) {
        if (w.present() && is_host(*w.backend) && weight_bytes(w) <= gpu_staging_limit_) {
            largest = std::max(largest, weight_bytes(w));
        }
    };
    for (int il = 0; il < model_.n_layer(); ++il) {
        for_each_product(model_.layer(il), consider);
        for_each_moe_weight(model_.layer(il).moe, consider);
    }
    if (largest == 0) {
        shipping_ok_ = false;  // nothing to ship, or no room the activations do not need
        return;
    }
    try {
        ship_[0] = backend(gpu_).allocate(largest, "prefill weight staging");
    } catch (const BudgetError&) {
        shipping_ok_ = false;
        return;
    }
    // A second slot where the limit holds two (runtime_budgets reserves them when two fit in a
    // quarter of the GPU): the next weight's copy then overlaps this one's product.
    // STRATA_SHIP_OVERLAP=0 keeps one, for A/B runs.
    static const bool overlap = !env_turned_off("STRATA_SHIP_OVERLAP");
    ship_slots_ = 1;
    next_slot_ = 0;
    if (overlap && largest <= gpu_staging_limit_ / 2) {
        try {
            ship_[1] = backend(gpu_).allocate(largest, "prefill weight staging (second slot)");
            ship_slots_ = 2;
        } catch (const BudgetError&) {
        }
    }
    ship_stats_.slots = ship_slots_;
}

LayerExecutor::StepMode LayerExecutor::begin_step(KvCache& kv, const int32_t* tokens, const int32_t* positions,
                                                  int64_t n, int64_t m, bool logits) {
    // A decode step with everything on the GPU runs as one graph once scratch sizes settled:
    // the last recording replayed at this position when nothing else changed, else recorded.
    Backend* graph = graphs_ && all_on_gpu_ && n == 1 && m == 1 && forwards_ > 0 &&
                             backend(gpu_).capabilities().step_graphs
                         ? &backend(gpu_) : nullptr;
    if (n == 1) ++forwards_;
    if (graph == nullptr) {
        // Not one graph: its GPU stretches may be, on the same conditions.
        segment_step_.on = graphs_ && gpu_ >= 0 && !all_on_gpu_ && n == 1 && forwards_ > 1 &&
                           backend(gpu_).capabilities().step_graphs;
        segment_step_.key = StepKey{kv.k(0).data, kv.n_ctx(), 0, false};
        segment_step_.token = tokens;
        segment_step_.position = positions;
        return StepMode::Eager;
    }
    const StepKey key{kv.k(0).data, kv.n_ctx(), act_epoch_, logits};
    if (step_key_ == key && graph->replay_step(this, tokens[0], positions[0])) return StepMode::Replayed;
    step_key_ = StepKey{};
    graph->begin_step_graph(this, tokens, positions);
    return StepMode::Record;
}

void LayerExecutor::end_step(StepMode mode, KvCache& kv, bool logits) {
    if (mode != StepMode::Record) return;
    backend(gpu_).end_graph();
    step_key_ = StepKey{kv.k(0).data, kv.n_ctx(), act_epoch_, logits};
}

void LayerExecutor::abort_step(StepMode mode) {
    if (mode == StepMode::Record) backend(gpu_).abort_graph();
}

LayerExecutor::StepMode LayerExecutor::begin_segment(int id) {
    if (id < 0) throw ArgumentError(cat("begin_segment: stretch id ", id, " is negative"));
    if (!segment_step_.on || x_home_ != gpu_) return StepMode::Eager;
    const auto i = static_cast<size_t>(id);
    if (segment_keys_.size() <= i) segment_keys_.resize(i + 1);
    StepKey key = segment_step_.key;
    key.act_epoch = act_epoch_;
    Backend& g = backend(gpu_);
    const StepGraphId graph{this, id + 1};  // part 0 is the whole step's
    if (segment_keys_[i] == key && g.replay_step(graph, *segment_step_.token, *segment_step_.position)) {
        return StepMode::Replayed;
    }
    segment_keys_[i] = StepKey{};
    segment_step_.key.act_epoch = act_epoch_;
    g.begin_step_graph(graph, segment_step_.token, segment_step_.position);
    return StepMode::Record;
}

void LayerExecutor::end_segment(StepMode mode, int id) {
    if (mode != StepMode::Record) return;
    backend(gpu_).end_graph();
    // A buffer regrown while recording leaves the recording naming the old one: record again.
    if (segment_step_.key.act_epoch == act_epoch_) segment_keys_[static_cast<size_t>(id)] = segment_step_.key;
}

void LayerExecutor::copy_hidden_out(const Tensor& out, int64_t m, std::vector<float>& hidden) {
    hidden.resize(static_cast<size_t>(n_embd_ * m));
    if (m == 0) return;
    Tensor host = Tensor::contiguous(GgmlType::F32, hidden.data(), {n_embd_, m});
    backend(x_home_).copy_out(out, host);
}

}  // namespace strata
