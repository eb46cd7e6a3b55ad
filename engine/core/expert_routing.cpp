// Top-k routing of one token (expert_routing.h).
#include "engine/core/expert_routing.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace strata {

void route_top_k(const float* logits, int64_t n_expert, const ExpertTopK& p, int32_t* ids, float* weights,
                 float* prob) {
    STRATA_INVARIANT(p.n_used >= 1 && p.n_used <= n_expert);
    const float max = *std::max_element(logits, logits + n_expert);
    float sum = 0.0f;
    for (int64_t e = 0; e < n_expert; ++e) sum += prob[e] = std::exp(logits[e] - max);
    for (int64_t e = 0; e < n_expert; ++e) prob[e] /= sum;
    // k passes of an argmax (k is small): the largest left, the lower index on a tie.
    float kept = 0.0f;
    for (int64_t j = 0; j < p.n_used; ++j) {
        int32_t best = -1;
        for (int64_t e = 0; e < n_expert; ++e) {
            if (prob[e] < 0.0f) continue;  // taken
            if (best < 0 || prob[e] > prob[best]) best = static_cast<int32_t>(e);
        }
        ids[j] = best;
        weights[j] = prob[best];
        kept += prob[best];
        prob[best] = -1.0f;
    }
    const float norm = p.norm_topk ? p.scale / kept : p.scale;
    for (int64_t j = 0; j < p.n_used; ++j) weights[j] *= norm;
}

}  // namespace strata
