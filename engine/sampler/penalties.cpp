// Logit-bias and repetition penalties. The history keeps counts incrementally so a sample costs
// O(distinct tokens in the window), not O(window) or O(vocabulary).
#include "engine/sampler/penalties.h"

#include "engine/core/error.h"

namespace strata {

void TokenHistory::push(int32_t token) {
    if (window_ == 0) return;
    ++counts_[token];
    ++size_;
    if (window_ < 0) return;
    tokens_.push_back(token);
    if (tokens_.size() > static_cast<size_t>(window_)) {
        const int32_t leaving = tokens_.front();
        tokens_.pop_front();
        --size_;
        auto it = counts_.find(leaving);
        STRATA_INVARIANT(it != counts_.end() && it->second > 0);
        if (--it->second == 0) counts_.erase(it);
    }
}

void TokenHistory::clear() {
    tokens_.clear();
    counts_.clear();
    size_ = 0;
}

void apply_logit_bias(std::span<float> logits, const std::map<int32_t, float>& bias) {
    for (const auto& [id, b] : bias) {
        STRATA_INVARIANT(id >= 0 && static_cast<size_t>(id) < logits.size());
        logits[static_cast<size_t>(id)] += b;
    }
}

void apply_penalties(std::span<float> logits, const TokenHistory& history,
                     const PenaltyParams& params) {
    for (const auto& [id, count] : history.counts()) {
        STRATA_INVARIANT(id >= 0 && static_cast<size_t>(id) < logits.size());
        float& logit = logits[static_cast<size_t>(id)];
        // Dividing a positive logit and multiplying a negative one both push it down.
        logit = logit > 0.0f ? logit / params.repeat : logit * params.repeat;
        logit -= static_cast<float>(count) * params.frequency + params.presence;
    }
}

}  // namespace strata
