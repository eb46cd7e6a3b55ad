// Activation-sparsity flags (sparsity_options.h).
#include "tools/sparsity_options.h"

#include "engine/core/error.h"

namespace strata::cli {

SparsityOptions SparsityFlags::options() const {
    SparsityOptions o;
    const bool given = sparsity_option != nullptr && sparsity_option->count() > 0;
    if (!given) {
        if (!stats.empty()) throw ArgumentError("--stats was given without --sparsity S");
        return o;
    }
    if (!(sparsity >= 0.0 && sparsity < 1.0)) {
        throw ArgumentError(cat("--sparsity ", sparsity, " is outside [0, 1): it is the fraction of FFN neurons skipped,",
                                " with thresholds calibrated by `strata profile -m MODEL -f TEXT`"));
    }
    o.sparsity = sparsity;
    o.stats_path = stats;
    return o;
}

void add_sparsity_options(CLI::App& cmd, SparsityFlags& flags) {
    flags.sparsity_option = cmd.add_option(
        "--sparsity", flags.sparsity,
        "skip this fraction of FFN neurons per token (0 <= S < 1; CPU backend; thresholds from `strata profile`)");
    cmd.add_option("--stats", flags.stats,
                   "activation stats from `strata profile` (default: MODEL.stats beside the model, else"
                   " ~/.cache/strata/MODEL.stats)");
}

}  // namespace strata::cli
