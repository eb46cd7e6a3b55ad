// strata plan's hot-neuron lines (hot_neuron_report.h).
#include "tools/hot_neuron_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "engine/core/byte_size.h"
#include "engine/runtime/hot_cold_ffn.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_weights.h"
#include "predictor/hot_cold_split.h"

namespace strata::cli {
namespace {

size_t grid_nearest(double s) {
    size_t best = 0;
    for (size_t i = 1; i < kNeuronCountSparsity.size(); ++i) {
        if (std::fabs(kNeuronCountSparsity[i] - s) < std::fabs(kNeuronCountSparsity[best] - s)) best = i;
    }
    return best;
}

// Neurons of layer il the placement has on the GPU.
int64_t gpu_neurons(const Placement& p, int il, int64_t n_ff) {
    if (const FfnSplit* s = p.ffn_split(il)) return s->gpu_end;
    const auto t = p.tier_of("blk." + std::to_string(il) + ".ffn_gate.weight");
    return t && *t == Tier::Gpu ? n_ff : 0;
}

struct Row {
    int64_t gpu = 0, all = 0;
    double hot_first = 0, file_order = 0;  // sums of shares, / layers
    int first = 0, last = 0, count = 0;
};

void print_row(const Row& r) {
    const double n = std::max(r.count, 1);
    std::printf("  layers %d-%d: GPU %.1f%% of neurons, %.1f%% of activations hot-first (%.1f%% in file order)\n", r.first,
                r.last, 100.0 * static_cast<double>(r.gpu) / static_cast<double>(std::max<int64_t>(r.all, 1)),
                100.0 * r.hot_first / n, 100.0 * r.file_order / n);
}

// Expected FFN bytes a decode token reads (activation rate x bytes, predictor/hot_cold_split.h):
// the chosen split, every neuron cold (CATS on the CPU), and the dense FFN.
void print_expected_bytes(const HotNeuronReportArgs& a, size_t grid) {
    const std::vector<NeuronBytes> bytes = hot_cold_neuron_bytes(*a.model, GgmlType::Q8_0, GgmlType::Q8_0);
    const auto& layers = a.model->weights().layers;
    double gpu = 0, cpu = 0, cold = 0, dense = 0;
    for (size_t il = 0; il < layers.size(); ++il) {
        const NeuronRates rates = layer_rates(a.profile->layers[il], grid);
        const SplitBytes s = split_bytes(rates, bytes[il], a.hot->at(il));
        gpu += s.gpu, cpu += s.cpu;
        cold += split_bytes(rates, bytes[il], 0).cpu;
        dense += static_cast<double>(layers[il].ffn_gate.n_bytes() + layers[il].ffn_up.n_bytes() + layers[il].ffn_down.n_bytes());
    }
    std::printf("  expected FFN bytes per token: GPU %s (hot, dense), CPU %s (cold gate rows, active up and down rows);"
                " all cold (CATS on the CPU) %s; dense %s\n",
                format_bytes(static_cast<uint64_t>(gpu)).c_str(), format_bytes(static_cast<uint64_t>(cpu)).c_str(),
                format_bytes(static_cast<uint64_t>(cold)).c_str(), format_bytes(static_cast<uint64_t>(dense)).c_str());
}

}  // namespace

void print_hot_neuron_report(const HotNeuronReportArgs& a) {
    const size_t grid = grid_nearest(a.sparsity);
    const auto& layers = a.model->weights().layers;
    if (a.profile->layers.size() != layers.size()) {
        std::printf("hot neurons: the stats have %zu layers, the model %zu: not shown\n", a.profile->layers.size(),
                    layers.size());
        return;
    }
    std::printf("hot neurons (stats at S = %.2f%s):\n", kNeuronCountSparsity[grid],
                a.hot != nullptr ? "; --hot-neurons: counts chosen for the GPU's room left" : "");
    Row row;
    Row all;
    int64_t prev = -1;
    for (size_t il = 0; il < layers.size(); ++il) {
        const int64_t n_ff = layers[il].ffn_gate.ne[1];
        if (n_ff == 0 || a.profile->layers[il].n_ff != n_ff) continue;  // MoE or mismatched: not shown
        const int64_t g = a.hot != nullptr ? a.hot->at(il) : gpu_neurons(*a.placement, static_cast<int>(il), n_ff);
        const double hot = activation_share(layer_rates(a.profile->layers[il], grid), g);
        const double file = file_order_share(a.profile->layers[il], grid, g);
        if (g != prev && prev >= 0) {
            print_row(row);
            row = Row{};
        }
        if (row.all == 0) row.first = static_cast<int>(il);
        row.last = static_cast<int>(il);
        row.gpu += g, row.all += n_ff, row.hot_first += hot, row.file_order += file, ++row.count;
        all.gpu += g, all.all += n_ff, all.hot_first += hot, all.file_order += file, ++all.count;
        prev = g;
    }
    if (row.all > 0) print_row(row);
    if (a.hot != nullptr) print_expected_bytes(a, grid);
    if (all.all > 0) {
        std::printf("  all layers: GPU %.1f%% of neurons, %.1f%% of activations hot-first (%.1f%% in file order)\n",
                    100.0 * static_cast<double>(all.gpu) / static_cast<double>(all.all),
                    100.0 * all.hot_first / all.count, 100.0 * all.file_order / all.count);
    }
}

}  // namespace strata::cli
