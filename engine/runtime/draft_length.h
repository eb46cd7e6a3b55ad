// The draft length k of each speculative pass (--draft-max auto, issue 25): a pass that checks
// k drafted tokens yields E(k) = (1 - a^(k+1)) / (1 - a) tokens when each drafted token is kept
// with probability a (given the ones before it were), and costs T(k) = pass(k + 1) + k · draft,
// the target's forward pass over k + 1 tokens and k steps of the proposer. k maximises E / T.
// a is estimated from the verdicts so far (kept / tried, with a prior and a decay that follows
// a text that changes character); pass(n) is a least-squares line through the pass times
// measured in this run (plain steps are n = 1), seeded with the cost model's decode time for
// one token and prefill time per token of a batch when the runtime has them.
#pragma once

#include <cstdint>

namespace strata {

struct DraftLengthPrior {
    double accept = 0.5;          // a before any verdict, worth `weight` tried tokens
    double weight = 4.0;
    double pass1_s = 0;           // the cost model's decode step; 0: unknown
    double per_token_s = 0;       // its prefill seconds per token of a batch; 0: unknown
};

class DraftLength {
public:
    DraftLength(int64_t k_max, const DraftLengthPrior& prior = {});

    // A forward pass of n tokens took `seconds` (n = 1: a plain decode step).
    void observe_pass(int64_t n, double seconds);
    // The proposer took `seconds` for `tokens` drafted tokens.
    void observe_draft(int64_t tokens, double seconds);
    // A verdict: `proposed` drafted, the first `accepted` kept.
    void observe_verdict(int64_t proposed, int64_t accepted);

    double acceptance() const;
    // pass(n) as the line predicts (>= 0).
    double pass_seconds(int64_t n) const;
    // Expected tokens per second of passes with k drafted tokens.
    double rate(int64_t k) const;
    // The k in 1..k_max of the highest rate.
    int64_t choose() const;

private:
    int64_t k_max_;
    DraftLengthPrior prior_;
    double kept_ = 0, tried_ = 0;               // decayed verdict counts
    double sn_ = 0, st_ = 0, snn_ = 0, snt_ = 0, w_ = 0;  // least-squares sums of (n, seconds), decayed
    double draft_s_ = 0, draft_n_ = 0;          // proposer seconds and tokens
};

}  // namespace strata
