// Top-k routing (moe_routing.h).
#include "engine/runtime/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"

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
    std::vector<int32_t> order(n_expert);
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* l = logits + static_cast<size_t>(t) * n_expert;
        const float max = *std::max_element(l, l + n_expert);
        float sum = 0.0f;
        for (size_t e = 0; e < n_expert; ++e) sum += prob[e] = std::exp(l[e] - max);
        for (float& v : prob) v /= sum;
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                          [&](int32_t a, int32_t b) { return prob[a] > prob[b] || (prob[a] == prob[b] && a < b); });
        float kept = 0.0f;
        for (size_t j = 0; j < k; ++j) kept += prob[static_cast<size_t>(order[j])];
        const float norm = p.norm_topk ? p.scale / kept : p.scale;
        for (size_t j = 0; j < k; ++j) {
            const size_t s = static_cast<size_t>(t) * k + j;
            out.expert[s] = order[j];
            out.weight[s] = prob[static_cast<size_t>(order[j])] * norm;
        }
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
