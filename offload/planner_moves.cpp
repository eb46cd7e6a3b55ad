// The greedy's moves towards the GPU (planner_search.h): the candidates offered from a layout,
// applying one, and taking it back.
#include <algorithm>

#include "offload/planner_search.h"

namespace strata::planner_detail {

Saved Planner::apply(Layout& l, const Move& m) const {
    Saved s;
    for (int i : m.tensors) {
        s.tiers.push_back(l.tier[static_cast<size_t>(i)]);
        l.tier[static_cast<size_t>(i)] = Tier::Gpu;
    }
    if (m.kv_layer >= 0) {
        s.kv = l.kv[static_cast<size_t>(m.kv_layer)];
        l.kv[static_cast<size_t>(m.kv_layer)] = Tier::Gpu;
    }
    if (m.ffn_layer >= 0) {
        const auto layer = static_cast<size_t>(m.ffn_layer);
        const FfnTensors& f = *cm_.ffn(m.ffn_layer);
        s.split = l.split[layer];
        const TensorEntry* parts[3] = {f.gate, f.up, f.down};
        for (int k = 0; k < 3; ++k) {
            const auto i = static_cast<size_t>(parts[k] - table_.tensors.data());
            s.ffn[static_cast<size_t>(k)] = l.tier[i];
            if (m.ffn_gpu_end == f.n_ff) l.tier[i] = Tier::Gpu;
        }
        if (m.ffn_gpu_end == f.n_ff) {
            l.split[layer].reset();
        } else {
            l.split[layer] = FfnSplit{m.ffn_layer, m.ffn_gpu_end, f.n_ff};
        }
    }
    if (m.expert_layer >= 0) apply_experts(l, m, s);
    return s;
}

// The layer's experts one by one (entering that mode, each expert on the slowest tier of
// the layer's three *_exps tensors), then its next m.n_experts most used ones on the GPU.
void Planner::apply_experts(Layout& l, const Move& m, Saved& s) const {
    const auto layer = static_cast<size_t>(m.expert_layer);
    l.experts.resize(static_cast<size_t>(table_.n_layer));
    std::vector<Tier>& x = l.experts[layer];
    s.experts = x;
    if (x.empty()) {
        Tier rest = Tier::Gpu;
        for (int k = 0; k < 3; ++k) rest = std::max(rest, l.tier[static_cast<size_t>(cm_.expert_index(m.expert_layer)[k])]);
        x.assign(static_cast<size_t>(cm_.experts(m.expert_layer)->n_expert), rest);
    }
    int64_t moved = 0;
    for (int e : expert_order_[layer]) {
        if (moved == m.n_experts) break;
        if (x[static_cast<size_t>(e)] == Tier::Gpu) continue;
        x[static_cast<size_t>(e)] = Tier::Gpu;
        ++moved;
    }
}

void Planner::revert(Layout& l, const Move& m, const Saved& s) const {
    if (m.expert_layer >= 0) l.experts[static_cast<size_t>(m.expert_layer)] = s.experts;
    for (size_t k = 0; k < m.tensors.size(); ++k) l.tier[static_cast<size_t>(m.tensors[k])] = s.tiers[k];
    if (m.kv_layer >= 0) l.kv[static_cast<size_t>(m.kv_layer)] = s.kv;
    if (m.ffn_layer >= 0) {
        const FfnTensors& f = *cm_.ffn(m.ffn_layer);
        l.split[static_cast<size_t>(m.ffn_layer)] = s.split;
        const TensorEntry* parts[3] = {f.gate, f.up, f.down};
        for (int k = 0; k < 3; ++k) {
            l.tier[static_cast<size_t>(parts[k] - table_.tensors.data())] = s.ffn[static_cast<size_t>(k)];
        }
    }
}

std::vector<int> Planner::affected(const Move& m) const {
    std::vector<int> segs;
    const auto add = [&](int s) {
        for (int x : {s, cm_.next_segment(s)}) {
            if (std::find(segs.begin(), segs.end(), x) == segs.end()) segs.push_back(x);
        }
    };
    for (int i : m.tensors) add(cm_.segment_of(i));
    if (m.kv_layer >= 0) add(m.kv_layer);
    if (m.ffn_layer >= 0) add(m.ffn_layer);
    if (m.expert_layer >= 0) add(m.expert_layer);
    return segs;
}

std::vector<Move> Planner::candidates(const Layout& l, bool deficit, GreedyMode mode) const {
    std::vector<Move> out;
    // Off the GPU and allowed on it by the rules.
    const auto off_gpu = [&](int i) {
        return l.tier[static_cast<size_t>(i)] != Tier::Gpu && pins_.gpu_ok(static_cast<size_t>(i));
    };
    for (int layer = 0; layer < table_.n_layer; ++layer) {
        std::vector<int> attn, other;
        for (int i : layer_tensors_[static_cast<size_t>(layer)]) {
            const TensorClass role = cm_.info()[static_cast<size_t>(i)].role;
            if (!off_gpu(i)) continue;
            if (role == TensorClass::Attn) attn.push_back(i);
            // A MoE layer's *_exps tensors move as experts (add_expert_moves), never one alone.
            const bool exps = cm_.experts(layer) && (i == cm_.expert_index(layer)[0] || i == cm_.expert_index(layer)[1] ||
                                                     i == cm_.expert_index(layer)[2]);
            if (role == TensorClass::LayerOther && !deficit && !exps) out.push_back({{i}});
        }
        if (l.kv[static_cast<size_t>(layer)] != Tier::Gpu && pins_.kv_ok(layer)) {
            out.push_back({{}, layer});
            if (!attn.empty()) out.push_back({attn, layer});
        }
        if (deficit) continue;
        if (!attn.empty()) out.push_back({attn});
        const auto& f = cm_.ffn(layer);
        if (f && pins_.gpu_ok(static_cast<size_t>(f->gate - table_.tensors.data()))) {
            add_ffn_moves(l, layer, *f, mode.fractions, out);
        }
        if (cm_.experts(layer) && pins_.gpu_ok(static_cast<size_t>(cm_.expert_index(layer)[0]))) {
            add_expert_moves(l, layer, mode.fractions, out);
        }
    }
    std::vector<int> small;
    for (size_t i = 0; i < table_.tensors.size(); ++i) {
        const auto& info = cm_.info()[i];
        if (info.layer >= 0 || !off_gpu(static_cast<int>(i))) continue;
        if (deficit && l.tier[i] != Tier::Ram) continue;
        if (info.role == TensorClass::Small) {
            small.push_back(static_cast<int>(i));
        } else {
            out.push_back({{static_cast<int>(i)}});
        }
    }
    for (int layer = 0; layer < table_.n_layer; ++layer) {
        for (int i : layer_tensors_[static_cast<size_t>(layer)]) {
            if (cm_.info()[static_cast<size_t>(i)].role == TensorClass::Small && off_gpu(i)) small.push_back(i);
        }
    }
    if (!small.empty()) out.push_back({small});
    return out;
}

// The FFN's GPU share grown to k/8 of n_ff (k = 1..8) and to as many granules as fit.
void Planner::add_ffn_moves(const Layout& l, int layer, const FfnTensors& f, bool fractions,
                            std::vector<Move>& out) const {
    const auto& s = l.split[static_cast<size_t>(layer)];
    const int64_t cur = s ? s->gpu_end
                          : (l.tier[static_cast<size_t>(f.gate - table_.tensors.data())] == Tier::Gpu ? f.n_ff : 0);
    if (cur >= f.n_ff) return;
    if (params_.whole_ffns) {  // the whole FFN or nothing
        if (cur == 0) out.push_back({{}, -1, layer, f.n_ff});
        return;
    }
    const auto round = [&](int64_t n) { return std::min(f.n_ff, (n + f.granule - 1) / f.granule * f.granule); };
    std::vector<int64_t> ends;
    for (int k = fractions ? 1 : 8; k <= 8; ++k) ends.push_back(round(f.n_ff * k / 8));
    const uint64_t have = ffn_slice_bytes(f, 0, cur);
    const uint64_t free = gpu_cap_ - static_cast<uint64_t>(std::max<int64_t>(gpu_used_, 0));
    // The largest granule boundary whose growth fits the GPU's free bytes.
    const auto boundary = [&](int64_t j) { return std::min(f.n_ff, j * f.granule); };
    int64_t lo = cur / f.granule, hi = (f.n_ff + f.granule - 1) / f.granule;
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (ffn_slice_bytes(f, 0, boundary(mid)) - have <= free) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    ends.push_back(boundary(lo));
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
    for (int64_t e : ends) {
        if (e > cur) out.push_back({{}, -1, layer, e});
    }
}

// The layer's next most used experts to the GPU: a step of n_expert/16 (at least one), as
// many as fit, or (whole-FFN mode) all the rest.
void Planner::add_expert_moves(const Layout& l, int layer, bool fractions, std::vector<Move>& out) const {
    const ExpertTensors& x = *cm_.experts(layer);
    int64_t on_gpu = 0;
    if (const std::vector<Tier>* t = l.experts_of(layer)) {
        on_gpu = std::count(t->begin(), t->end(), Tier::Gpu);
    } else {
        for (int k = 0; k < 3; ++k) {
            if (l.tier[static_cast<size_t>(cm_.expert_index(layer)[k])] == Tier::Gpu) return;  // whole, or pinned
        }
    }
    const int64_t left = x.n_expert - on_gpu;
    if (left <= 0) return;
    const uint64_t free = gpu_cap_ - static_cast<uint64_t>(std::max<int64_t>(gpu_used_, 0));
    const int64_t fit = std::min<int64_t>(left, static_cast<int64_t>(free / std::max<uint64_t>(x.bytes_per_expert, 1)));
    std::vector<int64_t> counts{fit, fractions ? std::max<int64_t>(1, x.n_expert / 16) : left};
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    for (int64_t n : counts) {
        if (n > 0 && n <= left) out.push_back({{}, -1, -1, 0, layer, n});
    }
}

}  // namespace strata::planner_detail
