// The planner's candidate layouts (planner_search.h): the greedy from the initial layout, the
// whole-layer splits and the built-in placement.
#include <algorithm>
#include <limits>

#include "engine/core/error.h"
#include "offload/builtin_placement.h"
#include "offload/planner_search.h"

namespace strata::planner_detail {

// Must-stay tensors and the KV in RAM; the rest in RAM in file order while it fits, else DISK.
Layout Planner::initial() const {
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
void Planner::refill(Layout& l, Usage use) const {
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

Layout Planner::plan_greedy(GreedyMode mode) {
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

// Layers 0..k-1 whole on the GPU (k = n_layer + 1: and the output matrix), the rest as
// initial(); the fastest k that fits.
std::optional<Layout> Planner::plan_whole_layers(int& best_k) const {
    std::optional<Layout> best;
    double best_j = std::numeric_limits<double>::infinity();
    for (int k = 0; k <= table_.n_layer + 1; ++k) {
        Layout l = initial();
        for (size_t i = 0; i < table_.tensors.size(); ++i) {
            const auto& info = cm_.info()[i];
            const bool gpu = (info.layer >= 0 && info.layer < k) ||
                             (k > table_.n_layer && info.role == TensorClass::Output);
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
std::optional<Layout> Planner::plan_builtin() const {
    BuiltinPlacementParams bp;
    bp.budgets = params_.budgets;
    bp.n_ctx = params_.n_ctx;
    bp.kv_type = params_.kv_type;
    bp.kv_bytes = kv_bytes_;
    bp.gpu_reserved_bytes = params_.gpu_reserved_bytes;
    bp.ram_reserved_bytes = params_.ram_reserved_bytes;
    bp.rules = params_.rules;
    bp.whole_ffns = params_.whole_ffns;
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

}  // namespace strata::planner_detail
