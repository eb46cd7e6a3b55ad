// The filtering stages of the sampling chain, as free functions on a candidate list:
// top-k, top-p, min-p, temperature and softmax. Sampler runs them in llama.cpp's order; tests
// run each one alone against a brute-force reference.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata {

struct Candidate {
    int32_t id;
    float logit;
    float p;  // probability; meaningful only after softmax()
};

// The tokens still in the running. Invariants: no logit is NaN or +inf; when `sorted` is true,
// tokens are ordered by logit descending, equal logits by id ascending (candidate_before).
struct CandidateList {
    std::vector<Candidate> tokens;
    bool sorted = false;

    // Refills from logits indexed by token id (all ids, unsorted). Keeps the capacity.
    void assign(std::span<const float> logits);
};

// Strict total order used by every stage: higher logit first, then lower id. Makes the result
// of partial sorts independent of the standard library.
inline bool candidate_before(const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// The same order as a function object, so std::sort can inline it (a function pointer is an
// indirect call per comparison).
struct CandidateBefore {
    bool operator()(const Candidate& a, const Candidate& b) const { return candidate_before(a, b); }
};

// Index of the largest logit, ties to the lowest id. list must not be empty.
size_t argmax_index(const CandidateList& list);

// Sets p = exp(logit - max) / sum over the list. Sum is accumulated in double. Requires at
// least one finite logit.
void softmax(CandidateList& list);

// Keeps the k best tokens (sorted). k <= 0 is a no-op; k > size is clamped to size.
void apply_top_k(CandidateList& list, int32_t k);

// Keeps the smallest sorted prefix whose cumulative probability is >= p, at least one token.
// p >= 1 is a no-op. Leaves p filled, relative to the list before the cut. A sorted or small
// list comes out sorted; a large unsorted one is cut without a full sort and stays unsorted
// (in a deterministic order).
void apply_top_p(CandidateList& list, float p);

// Keeps tokens with p >= min_p * p_max, i.e. logit >= max_logit + ln(min_p); never empties the
// list. min_p <= 0 is a no-op. Relative order is kept.
void apply_min_p(CandidateList& list, float min_p);

// Divides logits by temperature (> 0) after subtracting the maximum. Softmax is invariant to the
// shift, and it keeps huge logits divided by a tiny temperature from overflowing to +inf.
void apply_temperature(CandidateList& list, float temperature);

// Picks a token index by inverse CDF: the first i whose cumulative p exceeds u * sum(p), for u
// in [0, 1). Requires softmax() to have run. Never returns a token whose p is 0.
size_t pick_index(const CandidateList& list, double u);

}  // namespace strata
