// The filtering stages of the sampling chain, as free functions on a candidate list:
// top-k, top-p, min-p, temperature and softmax, and the vectorized scans over a whole
// vocabulary's logits they and the greedy pick start from. Sampler runs the stages in
// llama.cpp's order; tests run each one alone against a brute-force reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace strata {

// ---- Whole-vocabulary scans: the passes the sampler makes for every token (32k-256k logits),
// written as fixed runs of 16 lanes over read-only data so that the compiler vectorizes them at
// -O2 (a scalar argmax and a copy that checked each value cost ~100 us a token at 32k on the
// H200 host).

inline constexpr size_t kScanLanes = 16;  // the lanes (and runs) of every scan below

// One pass: whether every value is finite or -inf (none is NaN or +inf), and the largest
// value (-inf for none; NaN never counts as the largest).
struct LogitScan {
    bool valid;
    float max;
};
LogitScan scan_logits(std::span<const float> values);

// The lowest index whose value equals `value`, which must be one of them.
size_t first_index_of(std::span<const float> values, float value);

// The lowest index of the largest value. Values must be finite or -inf; at least one value.
size_t first_max_index(std::span<const float> values);

// The k-th largest value, counting repeats (1 <= k <= size; no NaN): the smallest of the k
// largest. Skips runs of kScanLanes whose largest cannot enter them, so a vocabulary costs about one
// vectorized pass. `heap` is scratch (its capacity is kept, so a caller's reuse allocates once).
float kth_largest(std::span<const float> values, size_t k, std::vector<float>& heap);

// Calls take(i), i increasing, for every index whose value is >= t (no NaN), skipping runs of
// kScanLanes that hold none.
template <class F>
void for_each_at_least(std::span<const float> values, float t, F&& take) {
    const size_t whole = values.size() / kScanLanes * kScanLanes;
    for (size_t i = 0; i < whole; i += kScanLanes) {
        int hit = 0;
        for (size_t j = 0; j < kScanLanes; ++j) hit |= values[i + j] >= t;
        if (hit == 0) continue;
        for (size_t j = 0; j < kScanLanes; ++j) {
            if (values[i + j] >= t) take(i + j);
        }
    }
    for (size_t i = whole; i < values.size(); ++i) {
        if (values[i] >= t) take(i);
    }
}

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
    // Refills with the k best of them (1 <= k), sorted: the list assign() then apply_top_k(k)
    // give, without a candidate per id (k >= the vocabulary: assign() and a full sort).
    void assign_top_k(std::span<const float> logits, size_t k);

private:
    // assign_top_k's scratch, kept for the capacity: the ids at the threshold, kth_largest's heap.
    std::vector<int32_t> ties_;
    std::vector<float> heap_;
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
