// Choice of the draft length from acceptance and pass costs (draft_length.h).
#include "engine/runtime/draft_length.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace strata {
namespace {

constexpr double kDecay = 0.97;  // per observation: about the last 30 count

}  // namespace

DraftLength::DraftLength(int64_t k_max, const DraftLengthPrior& prior) : k_max_(k_max), prior_(prior) {
    if (k_max < 1) throw ArgumentError(cat("the draft length's maximum must be >= 1, got ", k_max));
    if (prior.pass1_s > 0) {  // two points of the cost model's line, worth one observation each
        observe_pass(1, prior.pass1_s);
        if (prior.per_token_s > 0) observe_pass(k_max + 1, std::max(prior.pass1_s, (k_max + 1) * prior.per_token_s));
    }
}

void DraftLength::observe_pass(int64_t n, double seconds) {
    const double x = static_cast<double>(n);
    sn_ = sn_ * kDecay + x;
    st_ = st_ * kDecay + seconds;
    snn_ = snn_ * kDecay + x * x;
    snt_ = snt_ * kDecay + x * seconds;
    w_ = w_ * kDecay + 1.0;
}

void DraftLength::observe_draft(int64_t tokens, double seconds) {
    draft_s_ = draft_s_ * kDecay + seconds;
    draft_n_ = draft_n_ * kDecay + static_cast<double>(tokens);
}

void DraftLength::observe_verdict(int64_t proposed, int64_t accepted) {
    // Positions tried: the kept ones and the one rejected (those after it were never judged).
    kept_ = kept_ * kDecay + static_cast<double>(accepted);
    tried_ = tried_ * kDecay + static_cast<double>(accepted + (accepted < proposed ? 1 : 0));
}

double DraftLength::acceptance() const {
    const double a = (kept_ + prior_.accept * prior_.weight) / (tried_ + prior_.weight);
    return std::clamp(a, 0.0, 0.999);
}

double DraftLength::pass_seconds(int64_t n) const {
    if (w_ <= 0) return 1.0;  // nothing known: every pass costs the same
    const double mean_n = sn_ / w_, mean_t = st_ / w_;
    const double var = snn_ / w_ - mean_n * mean_n;
    const double slope = var > 1e-9 ? std::max(0.0, (snt_ / w_ - mean_n * mean_t) / var) : 0.0;
    return std::max(1e-9, mean_t + slope * (static_cast<double>(n) - mean_n));
}

double DraftLength::rate(int64_t k) const {
    const double a = acceptance();
    const double tokens = (1.0 - std::pow(a, static_cast<double>(k + 1))) / (1.0 - a);
    const double draft = draft_n_ > 0 ? draft_s_ / draft_n_ : 0.0;
    return tokens / (pass_seconds(k + 1) + static_cast<double>(k) * draft);
}

int64_t DraftLength::choose() const {
    int64_t best = 1;
    for (int64_t k = 2; k <= k_max_; ++k) {
        if (rate(k) > rate(best)) best = k;
    }
    return best;
}

}  // namespace strata
