// `strata profile --skew` (skew_report.h).
#include "tools/skew_report.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "engine/runtime/sparse_ffn.h"
#include "predictor/neuron_skew.h"

namespace strata::cli {
namespace {

void print_for(const ActivationProfile& profile, const ActivationProfile* order_from, double s, bool per_layer) {
    SkewRequest request;
    request.sparsity = s;
    request.order_from = order_from;
    const std::vector<LayerSkew> rows = neuron_skew(profile, request);
    const size_t nf = request.fractions.size();
    std::printf("S = %.2f: share of activations covered by the top 10%% / 20%% / 50%% of neurons\n", s);
    std::printf("  %5s %7s %7s %8s %8s %8s\n", "layer", "n_ff", "active", "top10%", "top20%", "top50%");
    std::vector<double> mean(nf, 0.0), lo(nf, 1.0), hi(nf, 0.0);
    double active = 0;
    for (const LayerSkew& r : rows) {
        if (per_layer) {
            std::printf("  %5d %7lld %6.1f%% %7.1f%% %7.1f%% %7.1f%%\n", r.layer, static_cast<long long>(r.n_ff),
                        100 * r.active_fraction, 100 * r.covered[0], 100 * r.covered[1], 100 * r.covered[2]);
        }
        active += r.active_fraction / static_cast<double>(rows.size());
        for (size_t i = 0; i < nf; ++i) {
            mean[i] += r.covered[i] / static_cast<double>(rows.size());
            lo[i] = std::min(lo[i], r.covered[i]);
            hi[i] = std::max(hi[i], r.covered[i]);
        }
    }
    std::printf("  %5s %7s %6.1f%% %7.1f%% %7.1f%% %7.1f%%   (min %.1f / %.1f / %.1f, max %.1f / %.1f / %.1f)\n", "mean",
                "", 100 * active, 100 * mean[0], 100 * mean[1], 100 * mean[2], 100 * lo[0], 100 * lo[1], 100 * lo[2],
                100 * hi[0], 100 * hi[1], 100 * hi[2]);
}

}  // namespace

void print_skew_report(const SkewArgs& args) {
    const ActivationProfile profile = read_activation_profile(args.stats);
    ActivationProfile order;
    if (!args.order_from.empty()) order = read_activation_profile(args.order_from);
    std::printf("neuron skew of %s (%s, %llu tokens; neurons counted over %llu)%s%s\n", args.stats.c_str(),
                profile.model_name.c_str(), static_cast<unsigned long long>(profile.n_tokens),
                static_cast<unsigned long long>(profile.layers.empty() ? 0 : profile.layers.front().neuron_tokens),
                args.order_from.empty() ? "" : ", neurons ranked by ", args.order_from.c_str());
    for (double s : {0.25, 0.5}) print_for(profile, args.order_from.empty() ? nullptr : &order, s, !args.summary_only);
}

}  // namespace strata::cli
