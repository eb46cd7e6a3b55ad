// The planner (planner.h states the search): greedy moves to the GPU by predicted seconds saved
// per byte, against whole-layer splits and the built-in placement.
#include "offload/planner.h"

#include <algorithm>
#include <limits>

#include "engine/core/error.h"
#include "offload/builtin_placement.h"

namespace strata {

namespace {

// Signed byte counts per tier: the change a move makes.
struct Usage {
    int64_t gpu = 0, ram = 0, disk = 0;
    Usage operator-(const Usage& o) const { return {gpu - o.gpu, ram - o.ram, disk - o.disk}; }
    Usage& operator+=(const Usage& o) {
        gpu += o.gpu;
        ram += o.ram;
        disk += o.disk;
        return *this;
    }
    void add(Tier tier, uint64_t bytes) {
        const auto b = static_cast<int64_t>(bytes);
        (tier == Tier::Gpu ? gpu : tier == Tier::Ram ? ram : disk) += b;
    }
};

// A move towards the GPU: whole tensors, a layer's KV, a layer's FFN up to ffn_gpu_end.
struct Move {
    std::vector<int> tensors;
    int kv_layer = -1;
    int ffn_layer = -1;
    int64_t ffn_gpu_end = 0;  // n_ff: the whole FFN
    int expert_layer = -1;    // the next n_experts most used experts of this layer off the GPU
    int64_t n_experts = 0;
};

// One way of ranking the greedy's moves; the planner runs each and keeps the best result, as
// ranking by seconds per byte alone packs the GPU badly when items are few and large.
struct GreedyMode {
    bool per_byte = true;   // rank by seconds saved per GPU byte, else by seconds saved
    bool fractions = true;  // offer FFN shares of k/8 of n_ff, else whole FFNs (and what fits)
};

struct Saved {
    std::vector<Tier> tiers;
    Tier kv = Tier::Ram;
    std::optional<FfnSplit> split;
    std::array<Tier, 3> ffn{};
    std::vector<Tier> experts;
};

bool must_stay(TensorRole role) {
    return role == TensorRole::Small || role == TensorRole::TokenEmbd ||
           role == TensorRole::Output || role == TensorRole::GlobalOther;
}

class Planner {
  public:
    Planner(const TensorTable& table, const HardwareProfile& profile, const PlannerParams& params)
        : table_(table), params_(params), cm_(table, profile, params.cost, params.kv_type),
          pins_(resolve_rules(table, params.rules)) {
        const int n_layer = table.n_layer;
        for (int l = 0; l < n_layer; ++l) {
            kv_bytes_.push_back(kv_bytes_per_layer(table, l, params.n_ctx, params.kv_type));
        }
        layer_tensors_.resize(static_cast<size_t>(n_layer));
        for (size_t i = 0; i < table.tensors.size(); ++i) {
            const int layer = cm_.info()[i].layer;
            if (layer >= 0) layer_tensors_[static_cast<size_t>(layer)].push_back(static_cast<int>(i));
        }
        expert_order_.resize(static_cast<size_t>(n_layer));
        for (int l = 0; l < n_layer; ++l) {
            if (!cm_.experts(l)) continue;
            const std::vector<double>& use = cm_.expert_use(l);
            std::vector<int>& order = expert_order_[static_cast<size_t>(l)];
            order.resize(use.size());
            for (size_t e = 0; e < use.size(); ++e) order[e] = static_cast<int>(e);
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return use[static_cast<size_t>(a)] > use[static_cast<size_t>(b)]; });
        }
        check_budgets(profile);
    }

    Placement run(PlanReport* report) {
        Layout greedy;
        CostEstimate greedy_e;
        double greedy_j = std::numeric_limits<double>::infinity();
        for (const GreedyMode mode : {GreedyMode{true, true}, GreedyMode{true, false},
                                      GreedyMode{false, true}, GreedyMode{false, false}}) {
            Layout l = plan_greedy(mode);
            const CostEstimate e = cm_.estimate(l);
            if (objective(e) < greedy_j * (1 - 1e-9)) {
                greedy = std::move(l);
                greedy_e = e;
                greedy_j = objective(e);
            }
        }
        int best_k = 0;
        const std::optional<Layout> whole = plan_whole_layers(best_k);
        const std::optional<Layout> builtin = plan_builtin();

        const Layout* best = &greedy;
        CostEstimate best_e = greedy_e;
        std::string chosen = "greedy";
        PlanReport r;
        r.greedy = greedy_e;
        const auto consider = [&](const std::optional<Layout>& l, const char* name, CostEstimate& out) {
            if (!l) return;
            out = cm_.estimate(*l);
            if (objective(out) < objective(best_e) * (1 - 1e-9)) {
                best = &*l;
                best_e = out;
                chosen = name;
            }
        };
        consider(whole, "whole layers", r.whole_layers);
        r.whole_layers_k = best_k;
        consider(builtin, "built-in", r.builtin);

        const Usage use = usage(*best);
        STRATA_INVARIANT(use.gpu <= static_cast<int64_t>(gpu_cap_) &&
                         use.ram <= static_cast<int64_t>(ram_cap_));
        Placement base;
        base.budgets = params_.budgets;
        base.n_ctx = params_.n_ctx;
        base.kv_type = params_.kv_type;
        base.predicted.decode_tok_s = 1.0 / best_e.decode_s_per_token;
        if (best_e.prefill_s_per_token > 0) base.predicted.prefill_tok_s = 1.0 / best_e.prefill_s_per_token;
        base.hardware = {profile_gpu_name_, profile_gpu_bytes_, profile_cpu_name_, profile_threads_,
                         profile_ram_bytes_};
        r.chosen = chosen;
        r.estimate = best_e;
        if (report) *report = r;
        return cm_.to_placement(*best, base);
    }

  private:
    // ---- budgets ----

    void check_budgets(const HardwareProfile& profile) {
        profile_gpu_name_ = profile.gpu_name;
        profile_gpu_bytes_ = profile.gpu_total_bytes;
        profile_cpu_name_ = profile.cpu_name;
        profile_threads_ = profile.cpu_threads;
        profile_ram_bytes_ = profile.ram_total_bytes;
        const Budgets& b = params_.budgets;
        const uint64_t gpu_reserved = b.gpu_bytes > 0 ? params_.gpu_reserved_bytes : 0;
        if (b.gpu_bytes > 0 && b.gpu_bytes < gpu_reserved) {
            throw BudgetError(cat("the GPU budget ", format_bytes(b.gpu_bytes), " is below the ",
                                  format_bytes(gpu_reserved),
                                  " the GPU needs for activations and workspace; give it at "
                                  "least that, or 0 to run without the GPU"));
        }
        if (b.gpu_bytes > gpu_reserved && !profile.has_gpu()) {
            throw ArgumentError(cat("the GPU budget is ", format_bytes(b.gpu_bytes),
                                    " but the hardware profile has no GPU measurements; measure "
                                    "the GPU or plan with a GPU budget of 0"));
        }
        gpu_cap_ = b.gpu_bytes - gpu_reserved;
        if (pinned_gpu_bytes(table_, pins_) > gpu_cap_) {
            throw BudgetError(cat("-ot puts ", format_bytes(pinned_gpu_bytes(table_, pins_)),
                                  " of tensors on the GPU but its budget leaves ", format_bytes(gpu_cap_),
                                  " for weights; raise --gpu-mem or match fewer tensors"));
        }
        uint64_t small = 0, embd = 0, output = 0, kv = 0;
        for (size_t i = 0; i < table_.tensors.size(); ++i) {
            const uint64_t bytes = table_.tensors[i].bytes;
            switch (cm_.info()[i].role) {
                case TensorRole::TokenEmbd: embd += bytes; break;
                case TensorRole::Output: output += bytes; break;
                case TensorRole::Small:
                case TensorRole::GlobalOther: small += bytes; break;
                default: break;
            }
        }
        for (uint64_t k : kv_bytes_) kv += k;
        const uint64_t must = small + embd + output + kv;
        const uint64_t ram_reserved = params_.ram_reserved_bytes;
        ram_cap_ = b.ram_bytes - std::min(b.ram_bytes, ram_reserved);
        if (must > gpu_cap_ + ram_cap_ || b.ram_bytes < ram_reserved) {
            throw BudgetError(cat(
                "the model needs at least ", format_bytes(must + ram_reserved + gpu_reserved),
                " of RAM+VRAM for what must stay in memory: the embedding table (",
                format_bytes(embd), "), the output matrix (", format_bytes(output),
                "), norms and biases (", format_bytes(small), "), the KV cache of ", params_.n_ctx,
                " cells (", format_bytes(kv), "), disk staging and activations in RAM (",
                format_bytes(ram_reserved), ") and GPU workspace (", format_bytes(gpu_reserved),
                "); the budgets give ", format_bytes(b.gpu_bytes), " VRAM + ",
                format_bytes(b.ram_bytes), " RAM"));
        }
    }

    Usage ffn_usage(const Layout& l, int layer) const {
        Usage u;
        const FfnTensors& f = *cm_.ffn(layer);
        if (const auto& s = l.split[static_cast<size_t>(layer)]) {
            u.add(Tier::Gpu, ffn_slice_bytes(f, 0, s->gpu_end));
            u.add(Tier::Ram, ffn_slice_bytes(f, s->gpu_end, s->ram_end));
            u.add(Tier::Disk, ffn_slice_bytes(f, s->ram_end, f.n_ff));
            return u;
        }
        for (const TensorEntry* t : {f.gate, f.up, f.down}) {
            u.add(l.tier[static_cast<size_t>(t - table_.tensors.data())], t->bytes);
        }
        return u;
    }

    bool in_split(const Layout& l, int i) const {
        const auto& info = cm_.info()[static_cast<size_t>(i)];
        return (info.role == TensorRole::Ffn && l.split[static_cast<size_t>(info.layer)].has_value()) || in_experts(l, i);
    }

    // Tensor i is a *_exps tensor of a layer whose experts are placed one by one.
    bool in_experts(const Layout& l, int i) const {
        const int layer = cm_.info()[static_cast<size_t>(i)].layer;
        if (layer < 0 || !l.experts_of(layer)) return false;
        const int* x = cm_.expert_index(layer);
        return i == x[0] || i == x[1] || i == x[2];
    }

    Usage experts_usage(const Layout& l, int layer) const {
        Usage u;
        if (const std::vector<Tier>* x = l.experts_of(layer)) {
            for (Tier t : *x) u.add(t, cm_.experts(layer)->bytes_per_expert);
            return u;
        }
        for (int k = 0; k < 3; ++k) {
            const int i = cm_.expert_index(layer)[k];
            u.add(l.tier[static_cast<size_t>(i)], table_.tensors[static_cast<size_t>(i)].bytes);
        }
        return u;
    }

    Usage usage(const Layout& l) const {
        Usage u;
        for (size_t i = 0; i < table_.tensors.size(); ++i) {
            if (!in_split(l, static_cast<int>(i))) u.add(l.tier[i], table_.tensors[i].bytes);
        }
        for (int layer = 0; layer < table_.n_layer; ++layer) {
            if (l.split[static_cast<size_t>(layer)]) u += ffn_usage(l, layer);
            if (l.experts_of(layer)) u += experts_usage(l, layer);
            u.add(l.kv[static_cast<size_t>(layer)], kv_bytes_[static_cast<size_t>(layer)]);
        }
        return u;
    }

    Usage touched_usage(const Layout& l, const Move& m) const {
        Usage u;
        for (int i : m.tensors) u.add(l.tier[static_cast<size_t>(i)], table_.tensors[static_cast<size_t>(i)].bytes);
        if (m.kv_layer >= 0) u.add(l.kv[static_cast<size_t>(m.kv_layer)], kv_bytes_[static_cast<size_t>(m.kv_layer)]);
        if (m.ffn_layer >= 0) u += ffn_usage(l, m.ffn_layer);
        if (m.expert_layer >= 0) u += experts_usage(l, m.expert_layer);
        return u;
    }

    // ---- moves ----

    Saved apply(Layout& l, const Move& m) const {
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
    void apply_experts(Layout& l, const Move& m, Saved& s) const {
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

    void revert(Layout& l, const Move& m, const Saved& s) const {
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

    std::vector<int> affected(const Move& m) const {
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

    // The objective after RAM left free takes back as many DISK bytes (the refill that
    // follows every committed move, approximated).
    double objective_with_refill(CostTerms t, int64_t ram_used, int64_t disk_bytes) const {
        const double refill = static_cast<double>(
            std::clamp<int64_t>(static_cast<int64_t>(ram_cap_) - ram_used, 0, std::max<int64_t>(disk_bytes, 0)));
        const double saved = refill / cm_.disk_bytes_per_s();
        t.disk_s = std::max(0.0, t.disk_s - saved);
        t.pf_disk_s = std::max(0.0, t.pf_disk_s - saved / static_cast<double>(params_.cost.n_prompt));
        return objective(cm_.combine(t));
    }

    double objective(const CostEstimate& e) const {
        return e.decode_s_per_token + params_.prefill_weight * e.prefill_s_per_token;
    }

    // ---- greedy ----

    // Must-stay tensors and the KV in RAM; the rest in RAM in file order while it fits, else DISK.
    Layout initial() const {
        Layout l;
        l.tier.assign(table_.tensors.size(), Tier::Disk);
        l.split.assign(static_cast<size_t>(table_.n_layer), std::nullopt);
        l.kv.assign(static_cast<size_t>(table_.n_layer), Tier::Ram);
        for (size_t i = 0; i < table_.tensors.size(); ++i) {
            if (must_stay(cm_.info()[i].role)) l.tier[i] = Tier::Ram;
            if (pins_.on_gpu(i)) l.tier[i] = Tier::Gpu;
        }
        refill(l, usage(l));
        return l;
    }

    // DISK tensors to RAM in file order while they fit.
    void refill(Layout& l, Usage use) const {
        for (size_t i = 0; i < table_.tensors.size(); ++i) {
            if (l.tier[i] != Tier::Disk || in_split(l, static_cast<int>(i))) continue;
            const auto bytes = static_cast<int64_t>(table_.tensors[i].bytes);
            if (use.ram + bytes > static_cast<int64_t>(ram_cap_)) continue;
            l.tier[i] = Tier::Ram;
            use.ram += bytes;
            use.disk -= bytes;
        }
        for (int layer = 0; layer < table_.n_layer; ++layer) {
            if (!l.experts_of(layer)) continue;
            std::vector<Tier>& x = l.experts[static_cast<size_t>(layer)];
            const auto bytes = static_cast<int64_t>(cm_.experts(layer)->bytes_per_expert);
            for (int e : expert_order_[static_cast<size_t>(layer)]) {
                if (x[static_cast<size_t>(e)] != Tier::Disk || use.ram + bytes > static_cast<int64_t>(ram_cap_)) continue;
                x[static_cast<size_t>(e)] = Tier::Ram;
                use.ram += bytes;
                use.disk -= bytes;
            }
        }
    }

    std::vector<Move> candidates(const Layout& l, bool deficit, GreedyMode mode) const {
        std::vector<Move> out;
        // Off the GPU and allowed on it by the rules.
        const auto off_gpu = [&](int i) {
            return l.tier[static_cast<size_t>(i)] != Tier::Gpu && pins_.gpu_ok(static_cast<size_t>(i));
        };
        for (int layer = 0; layer < table_.n_layer; ++layer) {
            std::vector<int> attn, other;
            for (int i : layer_tensors_[static_cast<size_t>(layer)]) {
                const TensorRole role = cm_.info()[static_cast<size_t>(i)].role;
                if (!off_gpu(i)) continue;
                if (role == TensorRole::Attn) attn.push_back(i);
                // A MoE layer's *_exps tensors move as experts (add_expert_moves), never one alone.
                const bool exps = cm_.experts(layer) && (i == cm_.expert_index(layer)[0] || i == cm_.expert_index(layer)[1] ||
                                                         i == cm_.expert_index(layer)[2]);
                if (role == TensorRole::LayerOther && !deficit && !exps) out.push_back({{i}});
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
            if (info.role == TensorRole::Small) {
                small.push_back(static_cast<int>(i));
            } else {
                out.push_back({{static_cast<int>(i)}});
            }
        }
        for (int layer = 0; layer < table_.n_layer; ++layer) {
            for (int i : layer_tensors_[static_cast<size_t>(layer)]) {
                if (cm_.info()[static_cast<size_t>(i)].role == TensorRole::Small && off_gpu(i)) small.push_back(i);
            }
        }
        if (!small.empty()) out.push_back({small});
        return out;
    }

    // The FFN's GPU share grown to k/8 of n_ff (k = 1..8) and to as many granules as fit.
    void add_ffn_moves(const Layout& l, int layer, const FfnTensors& f, bool fractions,
                       std::vector<Move>& out) const {
        const auto& s = l.split[static_cast<size_t>(layer)];
        const int64_t cur = s ? s->gpu_end
                              : (l.tier[static_cast<size_t>(f.gate - table_.tensors.data())] == Tier::Gpu ? f.n_ff : 0);
        if (cur >= f.n_ff) return;
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
    void add_expert_moves(const Layout& l, int layer, bool fractions, std::vector<Move>& out) const {
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

    Layout plan_greedy(GreedyMode mode) {
        Layout l = initial();
        gpu_used_ = usage(l).gpu;
        if (gpu_cap_ == 0) return l;
        std::vector<CostTerms> seg(static_cast<size_t>(cm_.n_segments()));
        CostTerms total;
        const auto recompute = [&] {
            total = {};
            for (int s = 0; s < cm_.n_segments(); ++s) total += seg[static_cast<size_t>(s)] = cm_.segment(l, s);
        };
        recompute();
        for (;;) {
            const Usage use = usage(l);
            gpu_used_ = use.gpu;
            const bool deficit = use.ram > static_cast<int64_t>(ram_cap_);
            const double j0 = objective_with_refill(total, use.ram, use.disk);
            std::pair<double, double> best_key;
            std::optional<Move> best;
            for (const Move& m : candidates(l, deficit, mode)) {
                const Usage before = touched_usage(l, m);
                const Saved saved = apply(l, m);
                const Usage d = touched_usage(l, m) - before;
                const bool fits = d.gpu > 0 && use.gpu + d.gpu <= static_cast<int64_t>(gpu_cap_) &&
                                  (deficit ? d.ram < 0 : use.ram + d.ram <= static_cast<int64_t>(ram_cap_));
                if (fits) {
                    CostTerms t = total;
                    for (int s : affected(m)) {
                        t -= seg[static_cast<size_t>(s)];
                        t += cm_.segment(l, s);
                    }
                    const double gain = j0 - objective_with_refill(t, use.ram + d.ram, use.disk + d.disk);
                    // Short of RAM, what frees most RAM per GPU byte comes first.
                    const double bytes = static_cast<double>(d.gpu);
                    const std::pair<double, double> key{
                        deficit ? static_cast<double>(-d.ram) / bytes : 0.0,
                        mode.per_byte || deficit ? gain / bytes : gain};
                    if ((deficit || gain > 1e-9 * j0) && (!best || key > best_key)) {
                        best_key = key;
                        best = m;
                    }
                }
                revert(l, m, saved);
            }
            if (!best) break;
            apply(l, *best);
            if (usage(l).ram <= static_cast<int64_t>(ram_cap_)) refill(l, usage(l));
            recompute();
        }
        if (usage(l).ram > static_cast<int64_t>(ram_cap_)) {
            throw BudgetError(cat("what must stay in memory does not fit: RAM holds ",
                                  format_bytes(ram_cap_), " after reserves and the GPU ",
                                  format_bytes(gpu_cap_), ", and no remaining item fits the GPU; "
                                  "raise the RAM budget by ",
                                  format_bytes(static_cast<uint64_t>(usage(l).ram) - ram_cap_)));
        }
        return l;
    }

    // ---- the other candidates ----

    // Layers 0..k-1 whole on the GPU (k = n_layer + 1: and the output matrix), the rest as
    // initial(); the fastest k that fits.
    std::optional<Layout> plan_whole_layers(int& best_k) const {
        std::optional<Layout> best;
        double best_j = std::numeric_limits<double>::infinity();
        for (int k = 0; k <= table_.n_layer + 1; ++k) {
            Layout l = initial();
            for (size_t i = 0; i < table_.tensors.size(); ++i) {
                const auto& info = cm_.info()[i];
                const bool gpu = (info.layer >= 0 && info.layer < k) ||
                                 (k > table_.n_layer && info.role == TensorRole::Output);
                if (gpu && pins_.gpu_ok(i)) l.tier[i] = Tier::Gpu;
            }
            for (int layer = 0; layer < std::min(k, table_.n_layer); ++layer) {
                if (pins_.kv_ok(layer)) l.kv[static_cast<size_t>(layer)] = Tier::Gpu;
            }
            for (size_t i = 0; i < table_.tensors.size(); ++i) {
                if (l.tier[i] == Tier::Ram && !must_stay(cm_.info()[i].role)) l.tier[i] = Tier::Disk;
            }
            Usage use = usage(l);
            if (use.gpu > static_cast<int64_t>(gpu_cap_)) break;
            if (use.ram > static_cast<int64_t>(ram_cap_)) continue;
            refill(l, use);
            const double j = objective(cm_.estimate(l));
            if (j < best_j) {
                best_j = j;
                best = l;
                best_k = k;
            }
        }
        return best;
    }

    // The built-in placement, when the executor can run it (its output matrix never on DISK).
    std::optional<Layout> plan_builtin() const {
        BuiltinPlacementParams bp;
        bp.budgets = params_.budgets;
        bp.n_ctx = params_.n_ctx;
        bp.kv_type = params_.kv_type;
        bp.kv_bytes = kv_bytes_;
        bp.gpu_reserved_bytes = params_.gpu_reserved_bytes;
        bp.ram_reserved_bytes = params_.ram_reserved_bytes;
        bp.rules = params_.rules;
        Layout l;
        try {
            l = cm_.layout_of(builtin_placement(table_, bp));
        } catch (const BudgetError&) {
            return std::nullopt;
        }
        for (size_t i = 0; i < table_.tensors.size(); ++i) {
            if (l.tier[i] == Tier::Disk && must_stay(cm_.info()[i].role)) return std::nullopt;
        }
        const Usage use = usage(l);
        if (use.gpu > static_cast<int64_t>(gpu_cap_) || use.ram > static_cast<int64_t>(ram_cap_)) {
            return std::nullopt;
        }
        return l;
    }

    const TensorTable& table_;
    const PlannerParams& params_;
    CostModel cm_;
    ResolvedRules pins_;
    std::vector<uint64_t> kv_bytes_;
    std::vector<std::vector<int>> layer_tensors_;
    std::vector<std::vector<int>> expert_order_;  // per layer: experts by expected use, most first
    uint64_t gpu_cap_ = 0;
    uint64_t ram_cap_ = 0;
    int64_t gpu_used_ = 0;
    std::string profile_gpu_name_, profile_cpu_name_;
    uint64_t profile_gpu_bytes_ = 0, profile_ram_bytes_ = 0;
    int profile_threads_ = 0;
};

}  // namespace

Placement plan_placement(const TensorTable& table, const HardwareProfile& profile,
                         const PlannerParams& params, PlanReport* report) {
    if (params.n_ctx <= 0) {
        throw ArgumentError(cat("planner: n_ctx must be positive, got ", params.n_ctx));
    }
    return Planner(table, profile, params).run(report);
}

}  // namespace strata
