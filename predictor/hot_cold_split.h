// Hot/cold split of FFN layers (issue 19): with each layer's neurons ordered hot-first, a prefix
// of `hot` neurons lives on the GPU and is computed densely there, the rest on the CPU with
// activation sparsity (gate rows dense, up and neuron-major down rows only for active neurons).
// From a stats file's per-neuron activity at one S this gives, per layer and hot count, the share
// of activations the GPU covers and the bytes a token is expected to read on each side
// (frequency x bytes), and chooses the hot counts that save the most CPU bytes under a GPU byte
// budget. Plain arithmetic; the executor and the planner use it.
#pragma once

#include <cstdint>
#include <vector>

#include "predictor/activation_profile.h"

namespace strata {

// One layer's neurons hot-first at one S, with their activation rates (active tokens / tokens).
struct NeuronRates {
    std::vector<int32_t> order;  // order[0]: the most often active neuron
    std::vector<double> prefix;  // prefix[k]: sum of the rates of order[0..k); size n_ff + 1
    int64_t n_ff() const { return static_cast<int64_t>(order.size()); }
    double total() const { return prefix.back(); }  // expected active neurons per token
};

// ArgumentError when the layer has no counts at `grid` (index into kNeuronCountSparsity).
NeuronRates layer_rates(const LayerActivationStats& layer, size_t grid);

// Share of the layer's activations carried by neurons [0, hot) of the order (0 when none fire).
double activation_share(const NeuronRates& rates, int64_t hot);
// The same for the file order's first `n` neurons (what a plain split's GPU range holds).
double file_order_share(const LayerActivationStats& layer, size_t grid, int64_t n);

// Bytes of one neuron in each matrix: a row of ffn_gate and ffn_up, a row of the neuron-major
// ffn_down copy (CPU side) and of ffn_down's columns as the GPU holds them.
struct NeuronBytes {
    double gate = 0, up = 0, down_cpu = 0, down_gpu = 0;
    double gpu_resident() const { return gate + up + down_gpu; }
};

// The expected active fraction of the cold neurons [hot, n_ff) per token at a run's S: their
// rates' mean, scaled so that the whole layer's expected active share is 1 - S (the stats' rates
// are at the grid S nearest the run's; the run's thresholds give 1 - S). 0 when none is cold;
// 1 - S when the stats count no activation. ArgumentError when hot is outside [0, n_ff].
double cold_active_fraction(const NeuronRates& rates, int64_t hot, double sparsity);

struct SplitBytes {
    double gpu = 0;  // read per token on the GPU: the hot range, dense
    double cpu = 0;  // read per token on the CPU: every cold gate row, active cold up/down rows
};
// ArgumentError when hot is outside [0, n_ff].
SplitBytes split_bytes(const NeuronRates& rates, const NeuronBytes& bytes, int64_t hot);

struct HotCountRequest {
    uint64_t gpu_bytes = 0;  // GPU bytes for FFN neurons (after attention, KV and the rest)
    int64_t granule = 256;   // hot counts are multiples of it (or n_ff)
    std::vector<bool> skip;  // per layer: takes no hot neuron (its FFN is on the GPU whole); may be shorter
};

// Hot count per layer: granules taken in order of CPU bytes saved per GPU byte, across layers,
// while they fit. Each layer's next granule saves no more than its previous one (rates fall
// hot-first), so taking the best granule each time is optimal up to the last granule's fit.
// ArgumentError when rates and bytes differ in size or granule < 1.
std::vector<int64_t> choose_hot_counts(const std::vector<NeuronRates>& rates, const std::vector<NeuronBytes>& bytes,
                                       const HotCountRequest& request);

}  // namespace strata
