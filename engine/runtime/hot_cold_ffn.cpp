// Hot neurons on the GPU, cold ones on the CPU: the load-time copies (hot_cold_ffn.h).
#include "engine/runtime/hot_cold_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "engine/core/backend.h"
#include "engine/core/byte_size.h"
#include "engine/core/error.h"
#include "engine/core/tensor_role.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/sparse_ffn.h"
#include "predictor/hot_cold_split.h"

namespace strata {
namespace {

bool on_host(const Backend& b) { return b.memory_kind() != MemoryKind::Device; }

// The neuron-count grid entry nearest to S.
size_t grid_nearest(double s) {
    size_t best = 0;
    for (size_t i = 1; i < kNeuronCountSparsity.size(); ++i) {
        if (std::fabs(kNeuronCountSparsity[i] - s) < std::fabs(kNeuronCountSparsity[best] - s)) best = i;
    }
    return best;
}

// A copy of host tensor `src` on backend b (the same tensor when b is a host backend).
Tensor upload(Backend& b, const Tensor& src, const std::string& what, std::vector<Buffer>& keep) {
    Buffer buf = b.allocate(src.n_bytes(), what);
    Tensor dst = src;
    dst.data = buf.data();
    dst.memory = buf.memory();
    if (on_host(b)) {
        std::memcpy(dst.data, src.data, src.n_bytes());
    } else {
        b.copy_in(src, dst);
    }
    keep.push_back(std::move(buf));
    return dst;
}

}  // namespace

void gather_rows(const Tensor& src, const std::vector<int32_t>& rows, Tensor& dst) {
    const size_t rb = row_bytes(src.type, src.ne[0]);
    if (dst.type != src.type || dst.ne[0] != src.ne[0] || dst.ne[1] != static_cast<int64_t>(rows.size())) {
        throw ArgumentError(cat("gathered rows ", dst.shape_string(), " of ", src.shape_string(), ": expected [",
                                src.ne[0], ", ", rows.size(), "] of the same type"));
    }
    for (size_t j = 0; j < rows.size(); ++j) {
        if (rows[j] < 0 || rows[j] >= src.ne[1]) throw ArgumentError(cat("row ", rows[j], " is outside ", src.shape_string()));
        std::memcpy(static_cast<uint8_t*>(dst.data) + j * dst.nb[1],
                    static_cast<const uint8_t*>(src.data) + static_cast<uint64_t>(rows[j]) * src.nb[1], rb);
    }
}

void gather_columns(const Tensor& src, const std::vector<int32_t>& cols, Tensor& dst) {
    const TypeTraits& in = type_traits(src.type);
    const TypeTraits& out = type_traits(dst.type);
    const auto n = static_cast<int64_t>(cols.size());
    if (in.dequantize == nullptr || out.quantize == nullptr) {
        throw UnsupportedError(cat("cannot re-quantize ", in.name, " columns to ", out.name));
    }
    if (dst.ne[0] != n || dst.ne[1] != src.ne[1] || n % out.block_size != 0) {
        throw ArgumentError(cat("gathered columns ", dst.shape_string(), " of ", src.shape_string(), ": expected [", n, ", ",
                                src.ne[1], "] with ", n, " a multiple of ", out.block_size));
    }
#pragma omp parallel
    {
        std::vector<float> row(static_cast<size_t>(src.ne[0])), picked(static_cast<size_t>(n));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < src.ne[1]; ++r) {
            in.dequantize(static_cast<const uint8_t*>(src.data) + static_cast<uint64_t>(r) * src.nb[1], row.data(), src.ne[0]);
            for (int64_t j = 0; j < n; ++j) picked[static_cast<size_t>(j)] = row.at(static_cast<size_t>(cols[static_cast<size_t>(j)]));
            out.quantize(picked.data(), static_cast<uint8_t*>(dst.data) + static_cast<uint64_t>(r) * dst.nb[1], n);
        }
    }
}

HotColdFfn::HotColdFfn(const PlacedModel& placed, const SparseFfn& sparse, const ActivationProfile& profile,
                       const HotColdOptions& options)
    : sparse_(sparse), hot_backend_(options.hot_backend) {
    const Model& model = placed.model();
    if (hot_backend_ == nullptr || placed.backend_index(hot_backend_) < 0) {
        throw UnsupportedError("hot neurons need a backend the placement uses (the GPU of its attention and KV)");
    }
    if (options.hot.size() != static_cast<size_t>(placed.n_layer())) {
        throw ArgumentError(cat("hot neuron counts for ", options.hot.size(), " layers, the model has ", placed.n_layer()));
    }
    mask_hot_ = options.mask_hot && hot_backend_->capabilities().sparse_ffn;
    const size_t grid = grid_nearest(sparse.sparsity());
    const int64_t block = type_traits(options.hot_down_type).block_size;
    layers_.resize(options.hot.size());
    for (int il = 0; il < placed.n_layer(); ++il) {
        const LayerWeights& lw = model.weights().layers[static_cast<size_t>(il)];
        Layer& l = layers_[static_cast<size_t>(il)];
        l.n_ff = lw.ffn_gate.ne[1];
        l.hot = options.hot[static_cast<size_t>(il)];
        // A layer whose FFN the placement put on a device runs its sparse FFN there, unsplit.
        l.split = placed.layer(il).ffn.front().gate.backend->memory_kind() != MemoryKind::Device;
        if (!l.split) {
            if (l.hot != 0) {
                throw ArgumentError(cat("layer ", il, ": ", l.hot, " hot neurons, but the placement puts its whole FFN on the",
                                        " GPU (expected 0)"));
            }
            ++device_layers_;
            continue;
        }
        if (l.hot < 0 || l.hot > l.n_ff || (l.hot % block != 0 && l.hot != l.n_ff)) {
            throw ArgumentError(cat("layer ", il, ": ", l.hot, " hot neurons of ", l.n_ff, " (expected a multiple of ", block,
                                    " for ", type_traits(options.hot_down_type).name, " ffn_down, or ", l.n_ff, ")"));
        }
        const NeuronRates rates = layer_rates(profile.layers.at(static_cast<size_t>(il)), grid);
        l.covered = activation_share(rates, l.hot);
        l.cold_active = cold_active_fraction(rates, l.hot, sparse.sparsity());
        const std::vector<int32_t> hot_index(rates.order.begin(), rates.order.begin() + l.hot);
        l.cold_index.assign(rates.order.begin() + l.hot, rates.order.end());
        const int64_t n_embd = lw.ffn_gate.ne[0], n_cold = l.n_ff - l.hot;
        // The cold gate rows stay on the CPU, in a host copy.
        Backend& cpu = *placed.layer(il).ffn.front().gate.backend;
        l.gate_cold = Tensor::contiguous(lw.ffn_gate.type, nullptr, {n_embd, n_cold});
        Buffer cold = cpu.allocate(std::max<uint64_t>(l.gate_cold.n_bytes(), 1), cat("blk.", il, ".ffn_gate cold rows"));
        l.gate_cold.data = cold.data();
        l.gate_cold.memory = cold.memory();
        gather_rows(lw.ffn_gate, l.cold_index, l.gate_cold);
        l.buffers.push_back(std::move(cold));
        cold_gate_bytes_ += l.gate_cold.n_bytes();
        if (l.hot == 0) continue;
        std::vector<uint8_t> host;
        auto staged = [&](GgmlType type, std::initializer_list<int64_t> ne) {
            Tensor t = Tensor::contiguous(type, nullptr, ne);
            host.resize(t.n_bytes());
            t.data = host.data();
            return t;
        };
        Tensor g = staged(lw.ffn_gate.type, {n_embd, l.hot});
        gather_rows(lw.ffn_gate, hot_index, g);
        l.gate_hot = upload(*hot_backend_, g, cat("blk.", il, ".ffn_gate hot rows"), l.buffers);
        Tensor u = staged(lw.ffn_up.type, {n_embd, l.hot});
        gather_rows(lw.ffn_up, hot_index, u);
        l.up_hot = upload(*hot_backend_, u, cat("blk.", il, ".ffn_up hot rows"), l.buffers);
        Tensor d = staged(options.hot_down_type, {l.hot, lw.ffn_down.ne[1]});
        gather_columns(lw.ffn_down, hot_index, d);
        l.down_hot = upload(*hot_backend_, d, cat("blk.", il, ".ffn_down hot columns"), l.buffers);
        hot_bytes_ += l.gate_hot.n_bytes() + l.up_hot.n_bytes() + l.down_hot.n_bytes();
    }
}

std::vector<NeuronBytes> hot_cold_neuron_bytes(const Model& model, GgmlType down_cpu, GgmlType down_gpu) {
    std::vector<NeuronBytes> out;
    for (const LayerWeights& lw : model.weights().layers) {
        const int64_t n_embd = lw.ffn_gate.ne[0];
        const int64_t block = type_traits(down_gpu).block_size;
        NeuronBytes b;
        b.gate = static_cast<double>(row_bytes(lw.ffn_gate.type, n_embd));
        b.up = static_cast<double>(row_bytes(lw.ffn_up.type, n_embd));
        b.down_cpu = static_cast<double>(row_bytes(down_cpu, n_embd));
        b.down_gpu = static_cast<double>(row_bytes(down_gpu, block)) / static_cast<double>(block) * static_cast<double>(n_embd);
        out.push_back(b);
    }
    return out;
}

namespace {

// Each layer's neuron rates at the grid S nearest `sparsity`. FormatError: other layer shapes.
std::vector<NeuronRates> model_rates(const Model& model, const ActivationProfile& profile, double sparsity) {
    const size_t grid = grid_nearest(sparsity);
    if (profile.layers.size() != model.weights().layers.size()) {
        throw FormatError(cat("the activation stats have ", profile.layers.size(), " layers, the model ",
                              model.weights().layers.size()));
    }
    std::vector<NeuronRates> rates;
    for (size_t il = 0; il < profile.layers.size(); ++il) {
        if (profile.layers[il].n_ff != model.weights().layers[il].ffn_gate.ne[1]) {
            throw FormatError(cat("the activation stats give layer ", il, " ", profile.layers[il].n_ff, " FFN neurons, the model ",
                                  model.weights().layers[il].ffn_gate.ne[1]));
        }
        rates.push_back(layer_rates(profile.layers[il], grid));
    }
    return rates;
}

}  // namespace

std::vector<int64_t> choose_hot_neurons(const Model& model, const ActivationProfile& profile,
                                        const HotNeuronRequest& request) {
    return choose_hot_counts(model_rates(model, profile, request.sparsity),
                             hot_cold_neuron_bytes(model, request.down_cpu, request.down_gpu),
                             HotCountRequest{request.gpu_bytes, request.granule, request.skip});
}

std::vector<int64_t> cheapest_hot_neurons(const Model& model, const ActivationProfile& profile,
                                          const HotNeuronRequest& request, const HotColdPricer& price) {
    const std::vector<NeuronRates> rates = model_rates(model, profile, request.sparsity);
    const std::vector<NeuronBytes> bytes = hot_cold_neuron_bytes(model, request.down_cpu, request.down_gpu);
    const std::vector<int64_t> whole =
        choose_hot_counts(rates, bytes, HotCountRequest{request.gpu_bytes, request.granule, request.skip});
    const auto costs = [&](const std::vector<int64_t>& hot) {
        std::vector<HotColdCost> out;
        for (size_t il = 0; il < rates.size(); ++il) {
            out.push_back({hot[il], cold_active_fraction(rates[il], hot[il], request.sparsity)});
        }
        return out;
    };
    std::vector<int64_t> best(rates.size(), 0);  // none first: ties keep fewer hot neurons
    try {
        double best_s = price(costs(best));
        for (const uint64_t divisor : {8, 4, 2, 1}) {
            const std::vector<int64_t> hot =
                divisor == 1 ? whole
                             : choose_hot_counts(rates, bytes, HotCountRequest{request.gpu_bytes / divisor, request.granule, request.skip});
            const double s = price(costs(hot));
            if (s < best_s) {
                best_s = s;
                best = hot;
            }
        }
    } catch (const Error&) {
        return whole;
    }
    return best;
}

std::vector<bool> gpu_ffn_layers(const Placement& placement, int n_layer) {
    std::vector<bool> out(static_cast<size_t>(std::max(n_layer, 0)), false);
    for (const TensorPlacement& t : placement.tensors) {
        const TensorNameInfo info = tensor_name_info(t.name);
        if (info.role == TensorRole::FfnGate && info.layer >= 0 && info.layer < n_layer && t.tier == Tier::Gpu) {
            out[static_cast<size_t>(info.layer)] = true;
        }
    }
    return out;
}

std::vector<HotColdCost> hot_cold_costs(const HotColdFfn& hc) {
    std::vector<HotColdCost> out;
    for (int il = 0; il < hc.n_layer(); ++il) out.push_back({hc.layer(il).hot, hc.layer(il).cold_active});
    return out;
}

std::vector<HotColdCost> hot_cold_costs(const Model& model, const ActivationProfile& profile, double sparsity,
                                        const std::vector<int64_t>& hot) {
    const std::vector<NeuronRates> rates = model_rates(model, profile, sparsity);
    if (hot.size() != rates.size()) throw ArgumentError(cat("hot neuron counts for ", hot.size(), " layers, the model has ", rates.size()));
    std::vector<HotColdCost> out;
    for (size_t il = 0; il < rates.size(); ++il) out.push_back({hot[il], cold_active_fraction(rates[il], hot[il], sparsity)});
    return out;
}

std::unique_ptr<HotColdFfn> load_hot_cold_ffn(const PlacedModel& placed, const SparseFfn* sparse, Backend* gpu,
                                              const HotColdLoad& load) {
    if (sparse == nullptr) {
        throw ArgumentError("--hot-neurons needs --sparsity S (the cold neurons run sparsely on the CPU)");
    }
    if (gpu == nullptr) throw ArgumentError("--hot-neurons needs a GPU (--gpu cuda, or --gpu fake to test)");
    const ActivationProfile profile = read_activation_profile(load.stats_path);
    HotNeuronRequest req;
    req.sparsity = sparse->sparsity();
    req.gpu_bytes = load.gpu_bytes;
    req.down_cpu = sparse->down_type();
    for (int il = 0; il < placed.n_layer(); ++il) {  // FFNs on the GPU whole take no hot neurons
        req.skip.push_back(placed.layer(il).ffn.front().gate.backend->memory_kind() == MemoryKind::Device);
    }
    HotColdOptions o;
    if (!load.hot.empty()) {
        o.hot = load.hot;
    } else if (load.price) {
        o.hot = cheapest_hot_neurons(placed.model(), profile, req, load.price);
    } else {
        o.hot = choose_hot_neurons(placed.model(), profile, req);
    }
    o.hot_backend = gpu;
    return std::make_unique<HotColdFfn>(placed, *sparse, profile, o);
}

std::string hot_cold_report(const HotColdFfn& hc) {
    int64_t hot = 0, all = 0;
    double covered = 0;
    for (int il = 0; il < hc.n_layer(); ++il) {
        hot += hc.layer(il).hot;
        all += hc.layer(il).n_ff;
        covered += hc.layer(il).covered / hc.n_layer();
    }
    std::ostringstream out;
    out << "hot neurons: " << hc.hot_backend()->name() << " " << fixed(100.0 * static_cast<double>(hot) / std::max<int64_t>(all, 1), 1)
        << "% of neurons, " << fixed(100.0 * covered, 1) << "% of activations (stats), " << format_bytes(hc.hot_bytes())
        << (hc.masks_hot() ? ", thresholded" : ", dense") << "; cold gate copy " << format_bytes(hc.cold_gate_bytes());
    if (hc.device_layers() > 0) out << "; " << hc.device_layers() << " layers' FFNs whole on " << hc.hot_backend()->name();
    out << "\n";
    return out.str();
}

}  // namespace strata
