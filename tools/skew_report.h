// `strata profile --skew STATS`: the share of each layer's FFN activations carried by its top
// 10/20/50% most often active neurons, at S = 0.25 and 0.5 (predictor/neuron_skew.h), per layer
// and the mean over layers; --order-from OTHER ranks the neurons by another stats file (another
// text) to show whether the hot set transfers.
#pragma once

#include <string>

namespace strata::cli {

struct SkewArgs {
    std::string stats;       // measured counts
    std::string order_from;  // empty: rank by `stats` itself
    bool summary_only = false;  // the mean over layers only
};

// Prints the table on stdout. FormatError / SystemError from reading a stats file.
void print_skew_report(const SkewArgs& args);

}  // namespace strata::cli
