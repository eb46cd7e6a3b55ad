// Residency of a layer's mixture of experts (placed_model.h PlacedMoe): the router, the shared
// expert, then every expert's gate/up/down slices, in the order the MoE step reads them (the
// DISK schedule is that order). Experts sit where their tensor is, or where the placement's
// expert tiers put each one.
#include <string>

#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"

namespace strata {

void PlacedModel::place_moe(int il, const LayerWeights& lw, const std::function<Tier(const std::string&)>& tier_of,
                            const ExpertTiers* per_expert, const TierBackends& tiers, PlacedMoe& out) {
    auto name = [&](const char* suffix) { return cat("blk.", il, ".", suffix); };
    auto put = [&](const Tensor& view, const char* suffix) {
        const std::string n = name(suffix);
        return place(view, n, tier_of(n), tiers);
    };
    out.router = put(lw.ffn_gate_inp, "ffn_gate_inp.weight");
    if (present(lw.ffn_gate_shexp)) {
        // [n_embd]: one row of a matrix [n_embd, 1]
        if (present(lw.ffn_gate_inp_shexp)) out.shared_gate = put(lw.ffn_gate_inp_shexp, "ffn_gate_inp_shexp.weight");
        out.shared.gate = put(lw.ffn_gate_shexp, "ffn_gate_shexp.weight");
        out.shared.up = put(lw.ffn_up_shexp, "ffn_up_shexp.weight");
        out.shared.down = put(lw.ffn_down_shexp, "ffn_down_shexp.weight");
    }
    const int64_t n_expert = lw.ffn_gate_exps.ne[2];
    if (per_expert != nullptr && per_expert->tiers.size() != static_cast<size_t>(n_expert)) {
        throw FormatError(cat("the placement gives layer ", il, " tiers for ", per_expert->tiers.size(),
                              " experts; it has ", n_expert));
    }
    const Tier gate_whole = per_expert ? Tier::Ram : tier_of(name("ffn_gate_exps.weight"));
    const Tier up_whole = per_expert ? Tier::Ram : tier_of(name("ffn_up_exps.weight"));
    const Tier down_whole = per_expert ? Tier::Ram : tier_of(name("ffn_down_exps.weight"));
    out.experts.resize(static_cast<size_t>(n_expert));
    for (int64_t e = 0; e < n_expert; ++e) {
        ExpertWeights& x = out.experts[static_cast<size_t>(e)];
        const Tier unit = per_expert ? per_expert->tiers[static_cast<size_t>(e)] : Tier::Ram;
        const Tier gate_tier = per_expert ? unit : gate_whole;
        const Tier up_tier = per_expert ? unit : up_whole;
        const Tier down_tier = per_expert ? unit : down_whole;
        x.gate = place(expert_slice(lw.ffn_gate_exps, e), name("ffn_gate_exps.weight"), gate_tier, tiers);
        x.up = place(expert_slice(lw.ffn_up_exps, e), name("ffn_up_exps.weight"), up_tier, tiers);
        x.down = place(expert_slice(lw.ffn_down_exps, e), name("ffn_down_exps.weight"), down_tier, tiers);
    }
}

std::vector<ExpertRef> expert_refs(const PlacedMoe& moe) {
    std::vector<ExpertRef> refs;
    refs.reserve(moe.experts.size());
    for (const ExpertWeights& e : moe.experts) refs.push_back({&e.gate.tensor, &e.up.tensor, &e.down.tensor, 0.0f});
    return refs;
}

bool moe_routes_on(const PlacedMoe& moe, const Backend& g, int64_t n_used, Activation act) {
    const auto resident = [&g](const PlacedWeight& w) { return w.backend == &g && w.stream_id < 0; };
    if (moe.experts.empty() || moe.shared.gate.present() || !moe.router.present() || !resident(moe.router)) return false;
    for (const ExpertWeights& e : moe.experts)
        if (!resident(e.gate) || !resident(e.up) || !resident(e.down)) return false;
    return g.routes_experts(expert_refs(moe), n_used, act);
}

}  // namespace strata
