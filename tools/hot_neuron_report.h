// `strata plan --stats FILE`: per run of layers, the share of FFN neurons a placement keeps on
// the GPU and the share of activations they carry (from the stats' per-neuron counts at the S of
// --sparsity, else 0.5): hot-first (the order --hot-neurons computes in), and in file order (what
// a plain split's GPU range holds). With --hot-neurons, the placement keeps FFNs off the GPU and
// the hot counts are chosen for the GPU's room left (at most: the activation reserve is taken at
// load), so the lines show those.
#pragma once

#include <cstdint>
#include <vector>

#include "offload/placement.h"
#include "predictor/activation_profile.h"

namespace strata {
class Model;
}

namespace strata::cli {

struct HotNeuronReportArgs {
    const Placement* placement = nullptr;
    const Model* model = nullptr;
    const ActivationProfile* profile = nullptr;
    double sparsity = 0.5;
    const std::vector<int64_t>* hot = nullptr;  // chosen hot counts (--hot-neurons), else the placement's
};

void print_hot_neuron_report(const HotNeuronReportArgs& args);

}  // namespace strata::cli
