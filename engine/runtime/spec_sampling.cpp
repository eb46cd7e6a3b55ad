// Rejection sampling of a drafted chain (spec_sampling.h).
#include "engine/runtime/spec_sampling.h"

#include <algorithm>

#include "engine/core/error.h"

namespace strata {

void dense_probabilities(std::span<const Candidate> candidates, std::vector<float>& out) {
    std::fill(out.begin(), out.end(), 0.0f);
    for (const Candidate& c : candidates) out[static_cast<size_t>(c.id)] = c.p;
}

int64_t draw_index(std::span<const float> weights, double u) {
    double total = 0;
    int64_t last = -1;
    for (size_t i = 0; i < weights.size(); ++i) {
        if (weights[i] > 0.0f) {
            total += weights[i];
            last = static_cast<int64_t>(i);
        }
    }
    if (last < 0) throw Error(cat("draw_index: no positive weight among ", weights.size()));
    const double target = u * total;
    double acc = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
        if (weights[i] <= 0.0f) continue;
        acc += weights[i];
        if (target < acc) return static_cast<int64_t>(i);
    }
    return last;
}

namespace {

// max(0, p - q), or p without the drafted token when q is one-hot (empty).
TokenId resample(std::span<const float> p, const std::vector<float>& q, TokenId drafted, SamplerRng& rng) {
    std::vector<float> residual(p.begin(), p.end());
    if (q.empty()) {
        residual[static_cast<size_t>(drafted)] = 0.0f;
    } else {
        for (size_t i = 0; i < residual.size(); ++i) residual[i] = std::max(0.0f, residual[i] - q[i]);
    }
    const bool any = std::any_of(residual.begin(), residual.end(), [](float r) { return r > 0.0f; });
    // p == q up to rounding: a rejection had (almost) no chance; p itself is the right law.
    return static_cast<TokenId>(draw_index(any ? std::span<const float>(residual) : p, rng.uniform01()));
}

}  // namespace

ChainVerdict judge_chain(std::span<const TokenId> draft, const std::function<std::span<const float>(int64_t i)>& target_p,
                         std::span<const std::vector<float>> q, SamplerRng& rng) {
    const int64_t k = static_cast<int64_t>(draft.size());
    if (!q.empty() && static_cast<int64_t>(q.size()) != k) {
        throw Error(cat("judge_chain: ", q.size(), " draft distributions for ", k, " draft tokens"));
    }
    ChainVerdict v;
    for (int64_t i = 0; i < k; ++i) {
        const std::span<const float> p = target_p(i);
        const TokenId d = draft[static_cast<size_t>(i)];
        static const std::vector<float> kOneHot;
        const std::vector<float>& qi = q.empty() ? kOneHot : q[static_cast<size_t>(i)];
        const double qd = qi.empty() ? 1.0 : qi[static_cast<size_t>(d)];
        const double pd = p[static_cast<size_t>(d)];
        // Kept with probability min(1, p/q): u < p/q, u uniform in [0, 1).
        if (qd > 0.0 && rng.uniform01() * qd < pd) {
            ++v.accepted;
            continue;
        }
        v.next = resample(p, qi, d, rng);
        return v;
    }
    v.next = static_cast<TokenId>(draw_index(target_p(k), rng.uniform01()));
    return v;
}

}  // namespace strata
