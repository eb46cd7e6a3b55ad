// The planner (planner.h states the search): greedy moves to the GPU by predicted seconds saved
// per byte, against whole-layer splits and the built-in placement.
#include "offload/planner.h"

#include <algorithm>
#include <limits>

#include "engine/core/error.h"
#include "offload/builtin_placement.h"
#include "offload/planner_search.h"

namespace strata::planner_detail {

Planner::Planner(const TensorTable& table, const HardwareProfile& profile, const PlannerParams& params)
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

Placement Planner::run(PlanReport* report) {
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

void Planner::check_budgets(const HardwareProfile& profile) {
    profile_gpu_name_ = profile.gpu_name;
    profile_gpu_bytes_ = profile.gpu_total_bytes;
    profile_cpu_name_ = profile.cpu_name;
    profile_threads_ = profile.cpu_threads;
    profile_ram_bytes_ = profile.ram_total_bytes;
    const Budgets& b = params_.budgets;
    const uint64_t gpu_reserved = checked_gpu_reserve(b, params_.gpu_reserved_bytes);
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
            case TensorClass::TokenEmbd: embd += bytes; break;
            case TensorClass::Output: output += bytes; break;
            case TensorClass::Small:
            case TensorClass::GlobalOther: small += bytes; break;
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

Usage Planner::ffn_usage(const Layout& l, int layer) const {
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

bool Planner::in_split(const Layout& l, int i) const {
    const auto& info = cm_.info()[static_cast<size_t>(i)];
    return (info.role == TensorClass::Ffn && l.split[static_cast<size_t>(info.layer)].has_value()) || in_experts(l, i);
}

// Tensor i is a *_exps tensor of a layer whose experts are placed one by one.
bool Planner::in_experts(const Layout& l, int i) const {
    const int layer = cm_.info()[static_cast<size_t>(i)].layer;
    if (layer < 0 || !l.experts_of(layer)) return false;
    const int* x = cm_.expert_index(layer);
    return i == x[0] || i == x[1] || i == x[2];
}

Usage Planner::experts_usage(const Layout& l, int layer) const {
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

Usage Planner::usage(const Layout& l) const {
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

Usage Planner::touched_usage(const Layout& l, const Move& m) const {
    Usage u;
    for (int i : m.tensors) u.add(l.tier[static_cast<size_t>(i)], table_.tensors[static_cast<size_t>(i)].bytes);
    if (m.kv_layer >= 0) u.add(l.kv[static_cast<size_t>(m.kv_layer)], kv_bytes_[static_cast<size_t>(m.kv_layer)]);
    if (m.ffn_layer >= 0) u += ffn_usage(l, m.ffn_layer);
    if (m.expert_layer >= 0) u += experts_usage(l, m.expert_layer);
    return u;
}

// The objective after RAM left free takes back as many DISK bytes (the refill that
// follows every committed move, approximated).
double Planner::objective_with_refill(CostTerms t, int64_t ram_used, int64_t disk_bytes) const {
    const double refill = static_cast<double>(
        std::clamp<int64_t>(static_cast<int64_t>(ram_cap_) - ram_used, 0, std::max<int64_t>(disk_bytes, 0)));
    const double saved = refill / cm_.disk_bytes_per_s();
    t.disk_s = std::max(0.0, t.disk_s - saved);
    t.pf_disk_s = std::max(0.0, t.pf_disk_s - saved / static_cast<double>(params_.cost.n_prompt));
    return objective(cm_.combine(t));
}

double Planner::objective(const CostEstimate& e) const {
    return e.decode_s_per_token + params_.prefill_weight * e.prefill_s_per_token;
}

}  // namespace strata::planner_detail

namespace strata {

Placement plan_placement(const TensorTable& table, const HardwareProfile& profile,
                         const PlannerParams& params, PlanReport* report) {
    if (params.n_ctx <= 0) {
        throw ArgumentError(cat("planner: n_ctx must be positive, got ", params.n_ctx));
    }
    return planner_detail::Planner(table, profile, params).run(report);
}

}  // namespace strata
