// Totals over a tensor table (see model_summary.h).
#include "engine/model/model_summary.h"

#include <algorithm>
#include <string_view>

namespace strata {

ModelSummary summarize_tensors(const std::vector<TensorInfo>& tensors) {
    ModelSummary s;
    for (const TensorInfo& t : tensors) {
        s.n_tensors += 1;
        s.n_params += t.n_elements();
        s.n_bytes += t.n_bytes;
        auto it = std::find_if(s.by_type.begin(), s.by_type.end(),
                               [&](const TypeUsage& u) { return u.type == t.type; });
        if (it == s.by_type.end()) {
            s.by_type.push_back({t.type, 0, 0, 0});
            it = s.by_type.end() - 1;
        }
        it->n_tensors += 1;
        it->n_elements += t.n_elements();
        it->n_bytes += t.n_bytes;
    }
    std::stable_sort(s.by_type.begin(), s.by_type.end(),
                     [](const TypeUsage& a, const TypeUsage& b) { return a.n_bytes > b.n_bytes; });
    return s;
}

namespace {

bool is_expert_tensor(const std::string& name) {
    for (const char* suffix : {".ffn_gate_exps.weight", ".ffn_up_exps.weight", ".ffn_down_exps.weight"}) {
        const std::string_view sv(suffix);
        if (name.size() > sv.size() && name.compare(name.size() - sv.size(), sv.size(), sv) == 0) return true;
    }
    return false;
}

}  // namespace

ExpertSummary summarize_experts(const std::vector<TensorInfo>& tensors, const ModelConfig& config) {
    ExpertSummary s;
    if (!config.is_moe()) return s;
    s.n_expert = config.moe.n_expert;
    s.n_expert_used = config.moe.n_expert_used;
    int64_t expert_params = 0;
    for (const TensorInfo& t : tensors) {
        s.total_bytes += t.n_bytes;
        if (is_expert_tensor(t.name)) {
            s.expert_bytes += t.n_bytes;
            expert_params += t.n_elements();
        } else {
            s.active_bytes += t.n_bytes;
            s.active_params += t.n_elements();
        }
    }
    const auto per_layer = static_cast<uint64_t>(config.n_layer * s.n_expert);
    s.bytes_per_expert = s.expert_bytes / per_layer;
    // Every layer reads n_expert_used of its n_expert experts.
    s.active_bytes += s.expert_bytes / static_cast<uint64_t>(s.n_expert) * static_cast<uint64_t>(s.n_expert_used);
    s.active_params += expert_params / s.n_expert * s.n_expert_used;
    return s;
}

}  // namespace strata
