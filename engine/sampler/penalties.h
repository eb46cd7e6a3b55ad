// The first stages of the chain, applied in place to logits indexed by token id: logit-bias,
// then repeat / presence / frequency penalties over a window of recently accepted tokens.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <unordered_map>

namespace strata {

// The last `window` accepted tokens and how often each occurs among them.
// window > 0: a sliding window; 0: nothing is kept; -1: every token since clear().
class TokenHistory {
public:
    explicit TokenHistory(int32_t window) : window_(window) {}

    void push(int32_t token);
    void clear();

    // Token id -> occurrences inside the window (only ids that occur).
    const std::unordered_map<int32_t, int32_t>& counts() const { return counts_; }
    size_t size() const { return size_; }

private:
    int32_t window_;
    size_t size_ = 0;
    std::deque<int32_t> tokens_;  // only for a sliding window, to know what leaves it
    std::unordered_map<int32_t, int32_t> counts_;
};

struct PenaltyParams {
    float repeat = 1.0f;     // logit > 0 -> logit / repeat, logit <= 0 -> logit * repeat
    float presence = 0.0f;   // subtracted once if the token occurs
    float frequency = 0.0f;  // subtracted once per occurrence
};

// logits[id] += bias for every entry. Ids must be < logits.size() (checked by the caller).
void apply_logit_bias(std::span<float> logits, const std::map<int32_t, float>& bias);

// For every token in the history: repeat penalty first, then
// logit -= count * frequency + presence. Tokens outside the history are untouched.
void apply_penalties(std::span<float> logits, const TokenHistory& history,
                     const PenaltyParams& params);

}  // namespace strata
