// Hot/cold split arithmetic (hot_cold_split.h).
#include "predictor/hot_cold_split.h"

#include <algorithm>
#include <numeric>
#include <queue>

#include "engine/core/error.h"
#include "predictor/neuron_skew.h"

namespace strata {

NeuronRates layer_rates(const LayerActivationStats& layer, size_t grid) {
    NeuronRates r;
    r.order = layer_hot_order(layer, grid);
    const std::vector<uint32_t>& c = layer.neuron_counts[grid];
    const double tokens = static_cast<double>(std::max<uint64_t>(layer.neuron_tokens, 1));
    r.prefix.assign(r.order.size() + 1, 0.0);
    for (size_t i = 0; i < r.order.size(); ++i) {
        r.prefix[i + 1] = r.prefix[i] + static_cast<double>(c[static_cast<size_t>(r.order[i])]) / tokens;
    }
    return r;
}

double activation_share(const NeuronRates& rates, int64_t hot) {
    if (hot < 0 || hot > rates.n_ff()) throw ArgumentError(cat("hot count ", hot, " is outside [0, ", rates.n_ff(), "]"));
    return rates.total() > 0 ? rates.prefix[static_cast<size_t>(hot)] / rates.total() : 0.0;
}

double file_order_share(const LayerActivationStats& layer, size_t grid, int64_t n) {
    const std::vector<uint32_t>& c = layer.neuron_counts.at(grid);
    if (n < 0 || n > static_cast<int64_t>(c.size())) {
        throw ArgumentError(cat("neuron count ", n, " is outside [0, ", c.size(), "]"));
    }
    const double total = std::accumulate(c.begin(), c.end(), 0.0);
    return total > 0 ? std::accumulate(c.begin(), c.begin() + n, 0.0) / total : 0.0;
}

double cold_active_fraction(const NeuronRates& rates, int64_t hot, double sparsity) {
    if (hot < 0 || hot > rates.n_ff()) throw ArgumentError(cat("hot count ", hot, " is outside [0, ", rates.n_ff(), "]"));
    if (hot == rates.n_ff()) return 0.0;
    const double active = 1.0 - sparsity;
    if (rates.total() <= 0) return active;
    const double cold = (rates.total() - rates.prefix[static_cast<size_t>(hot)]) / static_cast<double>(rates.n_ff() - hot);
    return std::clamp(cold * active * static_cast<double>(rates.n_ff()) / rates.total(), 0.0, 1.0);
}

SplitBytes split_bytes(const NeuronRates& rates, const NeuronBytes& bytes, int64_t hot) {
    if (hot < 0 || hot > rates.n_ff()) throw ArgumentError(cat("hot count ", hot, " is outside [0, ", rates.n_ff(), "]"));
    SplitBytes s;
    s.gpu = static_cast<double>(hot) * bytes.gpu_resident();
    const double cold_active = rates.total() - rates.prefix[static_cast<size_t>(hot)];
    s.cpu = static_cast<double>(rates.n_ff() - hot) * bytes.gate + cold_active * (bytes.up + bytes.down_cpu);
    return s;
}

namespace {

struct Step {
    double gain_per_byte;
    size_t layer;
    bool operator<(const Step& o) const {
        return gain_per_byte != o.gain_per_byte ? gain_per_byte < o.gain_per_byte : layer > o.layer;
    }
};

}  // namespace

std::vector<int64_t> choose_hot_counts(const std::vector<NeuronRates>& rates, const std::vector<NeuronBytes>& bytes,
                                       const HotCountRequest& request) {
    if (rates.size() != bytes.size()) {
        throw ArgumentError(cat("hot counts: ", rates.size(), " layers of rates, ", bytes.size(), " of bytes"));
    }
    if (request.granule < 1) throw ArgumentError(cat("hot count granule ", request.granule, " must be >= 1"));
    std::vector<int64_t> hot(rates.size(), 0);
    auto next_end = [&](size_t il) { return std::min(hot[il] + request.granule, rates[il].n_ff()); };
    auto step_of = [&](size_t il) {
        const int64_t end = next_end(il);
        const double saved = split_bytes(rates[il], bytes[il], hot[il]).cpu - split_bytes(rates[il], bytes[il], end).cpu;
        const double cost = static_cast<double>(end - hot[il]) * bytes[il].gpu_resident();
        return Step{cost > 0 ? saved / cost : 0.0, il};
    };
    std::priority_queue<Step> queue;
    for (size_t il = 0; il < rates.size(); ++il) {
        const bool skipped = il < request.skip.size() && request.skip[il];
        if (rates[il].n_ff() > 0 && !skipped) queue.push(step_of(il));
    }
    double left = static_cast<double>(request.gpu_bytes);
    while (!queue.empty()) {
        const size_t il = queue.top().layer;
        queue.pop();
        const int64_t end = next_end(il);
        const double cost = static_cast<double>(end - hot[il]) * bytes[il].gpu_resident();
        if (cost > left) continue;  // this layer's next granule does not fit; smaller ones may
        left -= cost;
        hot[il] = end;
        if (end < rates[il].n_ff()) queue.push(step_of(il));
    }
    return hot;
}

}  // namespace strata
