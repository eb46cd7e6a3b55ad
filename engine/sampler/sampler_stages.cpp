// Bodies of the whole-vocabulary scans and the filtering stages. Each stage keeps the
// CandidateList invariants stated in the header; partial sorts use candidate_before so the
// surviving set never depends on the library.
#include "engine/sampler/sampler_stages.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <vector>

#include "engine/core/error.h"

namespace strata {

// ---- Whole-vocabulary scans: each keeps kScanLanes running results, one per lane of a fixed
// inner loop, and combines them at the end.

LogitScan scan_logits(std::span<const float> v) {
    const size_t whole = v.size() / kScanLanes * kScanLanes;
    float hi[kScanLanes];
    int nan[kScanLanes] = {};
    for (float& h : hi) h = -INFINITY;
    for (size_t i = 0; i < whole; i += kScanLanes) {
        for (size_t j = 0; j < kScanLanes; ++j) {
            const float x = v[i + j];
            hi[j] = x > hi[j] ? x : hi[j];
            nan[j] |= x != x;
        }
    }
    float m = -INFINITY;
    int any_nan = 0;
    for (size_t j = 0; j < kScanLanes; ++j) {
        m = hi[j] > m ? hi[j] : m;
        any_nan |= nan[j];
    }
    for (size_t i = whole; i < v.size(); ++i) {
        m = v[i] > m ? v[i] : m;
        any_nan |= v[i] != v[i];
    }
    return {any_nan == 0 && m < INFINITY, m};
}

size_t first_index_of(std::span<const float> v, float value) {
    const size_t whole = v.size() / kScanLanes * kScanLanes;
    for (size_t i = 0; i < whole; i += kScanLanes) {
        int hit = 0;
        for (size_t j = 0; j < kScanLanes; ++j) hit |= v[i + j] == value;
        if (hit == 0) continue;
        for (size_t j = 0; j < kScanLanes; ++j) {
            if (v[i + j] == value) return i + j;
        }
    }
    for (size_t i = whole; i < v.size(); ++i) {
        if (v[i] == value) return i;
    }
    STRATA_INVARIANT(false);  // the value is one of them
    return 0;
}

size_t first_max_index(std::span<const float> v) {
    STRATA_INVARIANT(!v.empty());
    return first_index_of(v, scan_logits(v).max);
}

float kth_largest(std::span<const float> v, size_t k, std::vector<float>& heap) {
    STRATA_INVARIANT(k >= 1 && k <= v.size());
    // A min-heap of the k largest so far: its top is the value a newcomer must beat.
    heap.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k));
    std::make_heap(heap.begin(), heap.end(), std::greater<>{});
    const auto offer = [&](float x) {
        if (!(x > heap.front())) return;
        std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
        heap.back() = x;
        std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    };
    size_t i = k;
    for (; i < v.size() && i % kScanLanes != 0; ++i) offer(v[i]);
    const size_t whole = i + (v.size() - i) / kScanLanes * kScanLanes;
    for (; i < whole; i += kScanLanes) {
        float run_max = -INFINITY;
        for (size_t j = 0; j < kScanLanes; ++j) run_max = v[i + j] > run_max ? v[i + j] : run_max;
        if (!(run_max > heap.front())) continue;
        for (size_t j = 0; j < kScanLanes; ++j) offer(v[i + j]);
    }
    for (; i < v.size(); ++i) offer(v[i]);
    return heap.front();
}

// ---- The stages

void CandidateList::assign(std::span<const float> logits) {
    tokens.clear();  // then append: resize() would first value-initialise every element
    tokens.reserve(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
        tokens.push_back(Candidate{static_cast<int32_t>(i), logits[i], 0.0f});
    }
    sorted = false;
}

void CandidateList::assign_top_k(std::span<const float> logits, size_t k) {
    STRATA_INVARIANT(k >= 1);
    if (k >= logits.size()) {
        assign(logits);
        std::sort(tokens.begin(), tokens.end(), CandidateBefore{});
        sorted = true;
        return;
    }
    // Every logit above the k-th largest is in; of those equal to it, the lowest ids fill the
    // rest (candidate_before's order among equals).
    const float t = kth_largest(logits, k, heap_);
    tokens.clear();
    ties_.clear();
    for_each_at_least(logits, t, [&](size_t i) {
        if (logits[i] > t) {
            tokens.push_back(Candidate{static_cast<int32_t>(i), logits[i], 0.0f});
        } else if (ties_.size() < k) {
            ties_.push_back(static_cast<int32_t>(i));
        }
    });
    STRATA_INVARIANT(tokens.size() < k && tokens.size() + ties_.size() >= k);
    for (size_t j = 0; tokens.size() < k; ++j) tokens.push_back(Candidate{ties_[j], t, 0.0f});
    std::sort(tokens.begin(), tokens.end(), CandidateBefore{});
    sorted = true;
}

size_t argmax_index(const CandidateList& list) {
    STRATA_INVARIANT(!list.tokens.empty());
    if (list.sorted) return 0;
    size_t best = 0;
    for (size_t i = 1; i < list.tokens.size(); ++i) {
        if (candidate_before(list.tokens[i], list.tokens[best])) best = i;
    }
    return best;
}

void softmax(CandidateList& list) {
    auto& tokens = list.tokens;
    const float max_logit = tokens[argmax_index(list)].logit;
    STRATA_INVARIANT(max_logit > -INFINITY);
    double sum = 0.0;
    for (auto& c : tokens) {
        c.p = std::exp(c.logit - max_logit);  // -inf -> 0; the maximum contributes exactly 1
        sum += c.p;
    }
    const double inv_sum = 1.0 / sum;
    for (auto& c : tokens) c.p = static_cast<float>(c.p * inv_sum);
}

void apply_top_k(CandidateList& list, int32_t k) {
    auto& tokens = list.tokens;
    if (k <= 0) return;
    const size_t keep = std::min(static_cast<size_t>(k), tokens.size());
    if (!list.sorted) {
        // Heap selection: one comparison per token for the common case k << n.
        std::partial_sort(tokens.begin(), tokens.begin() + keep, tokens.end(), CandidateBefore{});
        list.sorted = true;
    }
    tokens.resize(keep);
}

namespace {

// Keeps tokens[0, first) and the shortest run of the sorted tokens[first, end) that brings the
// cumulative p, starting at `cum`, to `p`. If rounding keeps it just below p, everything stays.
void cut_sorted_tail(std::vector<Candidate>& tokens, size_t first, double cum, double p) {
    for (size_t i = first; i < tokens.size(); ++i) {
        cum += tokens[i].p;
        if (cum >= p) {
            tokens.resize(i + 1);
            return;
        }
    }
}

// Top-p on a large unsorted list without sorting it: histogram the probability mass by distance
// below the maximum logit, find the bucket where the cumulative mass reaches p, keep the buckets
// above it whole and sort only that boundary bucket to place the cut. Buckets follow the rank
// order, so this keeps exactly the sorted prefix (up to summation order).
void top_p_by_buckets(std::vector<Candidate>& tokens, float max_logit, double p) {
    constexpr size_t kBuckets = 2048;
    constexpr float kSpan = 32.0f;  // nats below the maximum; everything lower shares one bucket
    const auto bucket_of = [max_logit](float logit) {
        const float below = max_logit - logit;  // >= 0; +inf for -inf logits
        return below < kSpan ? static_cast<size_t>(below * (kBuckets / kSpan)) : kBuckets;
    };
    std::array<double, kBuckets + 1> mass{};
    for (const auto& c : tokens) mass[bucket_of(c.logit)] += c.p;
    size_t boundary = 0;
    double above = 0.0;  // mass of the buckets before `boundary`
    while (boundary < kBuckets && above + mass[boundary] < p) above += mass[boundary++];

    // Compact the kept buckets to the front, keeping their order. Then move the boundary bucket
    // behind the others: the swaps keep the order of the front group, and the boundary group is
    // sorted by a total order, so the result is the same with every standard library.
    size_t kept = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (bucket_of(tokens[i].logit) <= boundary) tokens[kept++] = tokens[i];
    }
    tokens.resize(kept);
    size_t n_above = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (bucket_of(tokens[i].logit) < boundary) std::swap(tokens[n_above++], tokens[i]);
    }
    std::sort(tokens.begin() + static_cast<ptrdiff_t>(n_above), tokens.end(), CandidateBefore{});
    cut_sorted_tail(tokens, n_above, above, p);
}

}  // namespace

void apply_top_p(CandidateList& list, float p) {
    auto& tokens = list.tokens;
    if (p >= 1.0f) return;
    if (tokens.size() <= 1) {
        list.sorted = true;  // one token is trivially sorted and is always kept
        return;
    }
    softmax(list);  // probabilities over the whole list, before any truncation
    constexpr size_t kSortBelow = 2048;  // under this, a full sort is as cheap as the histogram
    if (!list.sorted && tokens.size() >= kSortBelow) {
        top_p_by_buckets(tokens, tokens[argmax_index(list)].logit, p);
        return;
    }
    if (!list.sorted) std::sort(tokens.begin(), tokens.end(), CandidateBefore{});
    list.sorted = true;
    cut_sorted_tail(tokens, 0, 0.0, p);
}

void apply_min_p(CandidateList& list, float min_p) {
    if (min_p <= 0.0f || list.tokens.empty()) return;
    const double max_logit = list.tokens[argmax_index(list)].logit;
    // p_i >= min_p * p_max  <=>  logit_i - max_logit >= ln(min_p); the maximum always stays.
    const double threshold = max_logit + std::log(static_cast<double>(min_p));
    std::erase_if(list.tokens, [threshold](const Candidate& c) {
        return static_cast<double>(c.logit) < threshold;
    });
}

void apply_temperature(CandidateList& list, float temperature) {
    STRATA_INVARIANT(temperature > 0.0f);
    const float max_logit = list.tokens[argmax_index(list)].logit;
    for (auto& c : list.tokens) c.logit = (c.logit - max_logit) / temperature;
}

size_t pick_index(const CandidateList& list, double u) {
    const auto& tokens = list.tokens;
    STRATA_INVARIANT(!tokens.empty());
    double total = 0.0;
    for (const auto& c : tokens) total += c.p;
    const double target = u * total;
    double cum = 0.0;
    size_t last_positive = 0;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i].p <= 0.0f) continue;
        cum += tokens[i].p;
        if (cum > target) return i;
        last_positive = i;
    }
    return last_positive;  // u * total rounded up to the full sum
}

}  // namespace strata
