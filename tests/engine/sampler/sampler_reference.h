// Brute-force reference for the sampler tests: sort everything, compute in double, no
// shortcuts. Also a portable random-logit generator (raw mt19937 outputs, no std distributions).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace strata::ref {

// Uniform in [lo, hi) from raw 32-bit outputs, identical on every standard library.
inline std::vector<float> random_logits(size_t n, uint32_t seed, float lo = -8.0f,
                                        float hi = 8.0f) {
    std::mt19937 engine(seed);
    std::vector<float> logits(n);
    for (auto& x : logits) x = lo + (hi - lo) * static_cast<float>(engine() >> 8) * 0x1.0p-24f;
    return logits;
}

// All ids, by logit descending then id ascending.
inline std::vector<int32_t> sorted_ids(const std::vector<double>& logits) {
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    return ids;
}

// Softmax restricted to `keep` (others get 0), with logits divided by temperature.
inline std::vector<double> probabilities(const std::vector<double>& logits,
                                         const std::set<int32_t>& keep, double temperature = 1) {
    double max_logit = -INFINITY;
    for (int32_t id : keep) max_logit = std::max(max_logit, logits[id]);
    std::vector<double> p(logits.size(), 0.0);
    double sum = 0;
    for (int32_t id : keep) sum += p[id] = std::exp((logits[id] - max_logit) / temperature);
    for (auto& x : p) x /= sum;
    return p;
}

inline std::set<int32_t> all_ids(size_t n) {
    std::set<int32_t> ids;
    for (size_t i = 0; i < n; ++i) ids.insert(static_cast<int32_t>(i));
    return ids;
}

// A filter's reference result. Filters compare float probabilities with a threshold, so the
// tests accept any answer between the reference at a slightly looser and a slightly tighter
// threshold (kSlack); both are computed in double.
constexpr double kSlack = 1e-6;

inline std::set<int32_t> top_k(const std::vector<double>& logits, const std::set<int32_t>& in,
                               int k) {
    if (k <= 0) return in;
    std::set<int32_t> out;
    for (int32_t id : sorted_ids(logits)) {
        if (in.count(id) && static_cast<int>(out.size()) < k) out.insert(id);
    }
    return out;
}

inline std::set<int32_t> top_p(const std::vector<double>& logits, const std::set<int32_t>& in,
                               double p) {
    if (p >= 1.0 || in.size() <= 1) return in;
    const auto prob = probabilities(logits, in);
    std::set<int32_t> out;
    double cum = 0;
    for (int32_t id : sorted_ids(logits)) {
        if (!in.count(id)) continue;
        cum += prob[id];
        out.insert(id);
        if (cum >= p) break;
    }
    return out;
}

// Every id of a full vocabulary by rank, with its probability: for fast checks at 262144.
struct Ranked {
    std::vector<int32_t> order;  // ids, best first
    std::vector<size_t> rank;    // rank[id]
    std::vector<double> prob;    // prob[id], softmax over everything
};

inline Ranked rank_all(const std::vector<double>& logits) {
    Ranked r{sorted_ids(logits), std::vector<size_t>(logits.size()),
             probabilities(logits, all_ids(logits.size()))};
    for (size_t i = 0; i < r.order.size(); ++i) r.rank[r.order[i]] = i;
    return r;
}

// Length of the top-p nucleus: the shortest prefix with cumulative p >= p, at least 1.
inline size_t top_p_length(const Ranked& r, double p) {
    if (p >= 1.0) return r.order.size();
    double cum = 0;
    for (size_t i = 0; i < r.order.size(); ++i) {
        cum += r.prob[r.order[i]];
        if (cum >= p) return i + 1;
    }
    return r.order.size();
}

inline std::set<int32_t> min_p(const std::vector<double>& logits, const std::set<int32_t>& in,
                               double m) {
    if (m <= 0.0) return in;
    const auto prob = probabilities(logits, in);
    double p_max = 0;
    for (int32_t id : in) p_max = std::max(p_max, prob[id]);
    std::set<int32_t> out;
    for (int32_t id : in) {
        if (prob[id] >= m * p_max) out.insert(id);
    }
    return out;
}

// Penalised logits: counts taken by scanning the last `last_n` entries of history (-1 = all).
inline std::vector<double> penalize(std::vector<double> logits, const std::vector<int32_t>& history,
                                    int last_n, double repeat, double presence, double frequency) {
    if (last_n == 0) return logits;
    const size_t begin =
        last_n < 0 || history.size() <= static_cast<size_t>(last_n) ? 0 : history.size() - last_n;
    std::map<int32_t, int> count;
    for (size_t i = begin; i < history.size(); ++i) ++count[history[i]];
    for (const auto& [id, c] : count) {
        double& l = logits[id];
        l = l > 0 ? l / repeat : l * repeat;
        l -= c * frequency + presence;
    }
    return logits;
}

inline std::vector<double> to_double(const std::vector<float>& x) {
    return std::vector<double>(x.begin(), x.end());
}

}  // namespace strata::ref
