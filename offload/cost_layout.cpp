// The planner's Layout (tiers by table index) and a Placement (tiers by tensor name), converted
// both ways (cost_model.h: layout_of, to_placement).
#include <algorithm>
#include <unordered_map>

#include "engine/core/error.h"
#include "offload/cost_model.h"

namespace strata {

Layout CostModel::layout_of(const Placement& placement) const {
    std::unordered_map<std::string, size_t> index;
    for (size_t i = 0; i < table_.tensors.size(); ++i) index.emplace(table_.tensors[i].name, i);
    Layout layout;
    layout.tier.assign(table_.tensors.size(), Tier::Ram);
    layout.split.assign(layers_.size(), std::nullopt);
    for (const TensorPlacement& t : placement.tensors) {
        const auto it = index.find(t.name);
        if (it == index.end()) throw FormatError(cat("placement names unknown tensor '", t.name, "'"));
        layout.tier[it->second] = t.tier;
    }
    for (const FfnSplit& s : placement.ffn_splits) {
        if (s.layer < 0 || s.layer >= table_.n_layer || !layers_[static_cast<size_t>(s.layer)].ffn) {
            throw FormatError(cat("placement splits layer ", s.layer, ", which has no splittable FFN"));
        }
        layout.split[static_cast<size_t>(s.layer)] = s;
    }
    if (placement.kv.size() != layers_.size()) {
        throw FormatError(cat("placement has ", placement.kv.size(), " kv entries; the model has ",
                              layers_.size(), " layers"));
    }
    layout.kv = placement.kv;
    for (const ExpertTiers& x : placement.expert_tiers) {
        if (x.layer < 0 || x.layer >= table_.n_layer || !layers_[static_cast<size_t>(x.layer)].experts) {
            throw FormatError(cat("placement places experts of layer ", x.layer, ", which has none"));
        }
        layout.experts.resize(layers_.size());
        layout.experts[static_cast<size_t>(x.layer)] = x.tiers;
    }
    return layout;
}

Placement CostModel::to_placement(const Layout& layout, const Placement& base) const {
    Placement p = base;
    p.tensors.clear();
    p.ffn_splits.clear();
    p.expert_tiers.clear();
    p.kv = layout.kv;
    // A "split" whose neurons all share one tier is written as whole tensors.
    std::vector<std::optional<Tier>> whole(layers_.size());
    for (size_t l = 0; l < layers_.size(); ++l) {
        const auto& s = layout.split[l];
        if (!s) continue;
        const int64_t n_ff = layers_[l].ffn->n_ff;
        if (s->gpu_end == n_ff) {
            whole[l] = Tier::Gpu;
        } else if (s->gpu_end == 0 && s->ram_end == n_ff) {
            whole[l] = Tier::Ram;
        } else if (s->ram_end == 0) {
            whole[l] = Tier::Disk;
        } else {
            p.ffn_splits.push_back({static_cast<int>(l), s->gpu_end, s->ram_end});
        }
    }
    // Experts all on one tier are written as whole tensors.
    std::vector<std::optional<Tier>> experts_whole(layers_.size());
    for (size_t l = 0; l < layers_.size(); ++l) {
        const std::vector<Tier>* x = layout.experts_of(static_cast<int>(l));
        if (!x) continue;
        if (std::all_of(x->begin(), x->end(), [&](Tier t) { return t == x->front(); })) {
            experts_whole[l] = x->front();
        } else {
            p.expert_tiers.push_back({static_cast<int>(l), *x});
        }
    }
    for (size_t i = 0; i < table_.tensors.size(); ++i) {
        Tier tier = layout.tier[i];
        if (info_[i].layer >= 0 && layout.experts_of(info_[i].layer)) {
            const LayerInfo& L = layers_[static_cast<size_t>(info_[i].layer)];
            if (std::find(std::begin(L.expert_index), std::end(L.expert_index), static_cast<int>(i)) != std::end(L.expert_index)) {
                if (!experts_whole[static_cast<size_t>(info_[i].layer)]) continue;
                tier = *experts_whole[static_cast<size_t>(info_[i].layer)];
            }
        }
        if (info_[i].role == TensorClass::Ffn) {
            const auto l = static_cast<size_t>(info_[i].layer);
            if (layout.split[l]) {
                if (!whole[l]) continue;
                tier = *whole[l];
            }
        }
        p.tensors.push_back({table_.tensors[i].name, tier});
    }
    return p;
}

}  // namespace strata
