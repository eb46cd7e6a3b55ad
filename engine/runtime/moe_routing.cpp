// Top-k routing (moe_routing.h).
#include "engine/runtime/moe_routing.h"

#include "engine/core/error.h"
#include "engine/core/expert_routing.h"

namespace strata {

void route_tokens(const float* logits, int64_t n_tokens, const RoutingParams& p, MoeRouting& out) {
    STRATA_INVARIANT(p.n_used >= 1 && p.n_used <= p.n_expert);
    const auto n_expert = static_cast<size_t>(p.n_expert);
    const auto k = static_cast<size_t>(p.n_used);
    out.n_tokens = n_tokens;
    out.n_used = p.n_used;
    out.expert.resize(static_cast<size_t>(n_tokens) * k);
    out.weight.resize(static_cast<size_t>(n_tokens) * k);
    std::vector<float> prob(n_expert);
    const ExpertTopK top_k{p.n_used, p.norm_topk, p.scale};
    for (int64_t t = 0; t < n_tokens; ++t) {
        const size_t s = static_cast<size_t>(t) * k;
        route_top_k(logits + static_cast<size_t>(t) * n_expert, p.n_expert, top_k, out.expert.data() + s,
                    out.weight.data() + s, prob.data());
    }
    // Counting sort of the slots by expert (stable: token order within an expert).
    out.offsets.assign(n_expert + 1, 0);
    for (int32_t e : out.expert) ++out.offsets[static_cast<size_t>(e) + 1];
    for (size_t e = 0; e < n_expert; ++e) out.offsets[e + 1] += out.offsets[e];
    out.by_expert.resize(out.expert.size());
    std::vector<int32_t> next(out.offsets.begin(), out.offsets.end() - 1);
    for (size_t s = 0; s < out.expert.size(); ++s)
        out.by_expert[static_cast<size_t>(next[static_cast<size_t>(out.expert[s])]++)] = static_cast<int32_t>(s);
}

}  // namespace strata
