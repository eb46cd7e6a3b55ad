// HotColdFfn: hot neurons on the GPU, cold ones on the CPU (issue 19). Each FFN layer's neurons
// are ordered hot-first by the stats file's activity counts (predictor/hot_cold_split.h); the
// first `hot` of them are gathered at load into copies on the hot backend (gate/up rows as they
// are, ffn_down's columns re-quantized to hot_down_type) and computed there, the rest run on
// the CPU with activation sparsity (SparseFfn's thresholds, and its neuron-major ffn_down where
// the layer keeps one; the CPU computes only the cold gate rows, from a gathered copy). Per
// layer and step: one transfer of the normed input to the hot backend, one of its partial output
// back, summed on the CPU. The function is CATS with the same mask as the unsplit SparseFfn when
// the hot backend has the thresholded activation (capabilities().sparse_ffn) and mask_hot is on;
// otherwise the hot neurons are always kept (dense on the GPU) and only cold ones are skipped.
// A layer whose FFN the placement put on the GPU whole is not split (its sparse FFN runs there;
// hot count 0). The hot copies are allocated on the hot backend beyond the placement.
// Immutable after construction; sessions share it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/buffer.h"
#include "engine/core/tensor.h"
#include "offload/cost_model.h"
#include "predictor/activation_profile.h"
#include "predictor/hot_cold_split.h"
#include "quant/ggml_type.h"

namespace strata {

class Backend;
class LayerProgram;
class Model;
class PlacedModel;
class SparseFfn;

struct HotColdOptions {
    std::vector<int64_t> hot;        // hot neurons per layer (multiples of hot_down_type's block, or n_ff)
    Backend* hot_backend = nullptr;  // the GPU (or fake device); a host backend runs the hot range itself
    GgmlType hot_down_type = GgmlType::Q8_0;
    bool mask_hot = true;  // apply the threshold to hot neurons where the hot backend can
};

class HotColdFfn {
  public:
    struct Layer {
        int64_t n_ff = 0, hot = 0;
        std::vector<int32_t> cold_index;  // file index of cold neuron j (hot-first order)
        Tensor gate_hot, up_hot;          // [n_embd, hot] rows of the hot neurons, on hot_backend
        Tensor down_hot;                  // [hot, n_embd] ffn_down's hot columns, on hot_backend
        Tensor gate_cold;                 // [n_embd, n_ff - hot] host rows of the cold neurons
        double covered = 0;               // share of the profile's activations the hot ones carry
        double cold_active = 0;           // the cold neurons' expected active fraction at S (stats)
        bool split = true;                // false: the FFN is on the GPU whole (sparse there, no copies)
        std::vector<Buffer> buffers;
    };

    // `profile` gives the hot-first order (its neuron counts nearest to sparse's S). ArgumentError:
    // a hot count outside [0, n_ff] or not a multiple of the block, counts for other than every
    // layer. UnsupportedError: a hot backend the model's placement does not use.
    // BudgetError from the hot backend when the copies do not fit.
    HotColdFfn(const PlacedModel& placed, const SparseFfn& sparse, const ActivationProfile& profile,
               const HotColdOptions& options);

    const SparseFfn& sparse() const { return sparse_; }
    Backend* hot_backend() const { return hot_backend_; }
    bool masks_hot() const { return mask_hot_; }
    int n_layer() const { return static_cast<int>(layers_.size()); }
    const Layer& layer(int il) const { return layers_.at(static_cast<size_t>(il)); }
    uint64_t hot_bytes() const { return hot_bytes_; }    // on the hot backend
    uint64_t cold_gate_bytes() const { return cold_gate_bytes_; }  // the host gate copies
    int device_layers() const { return device_layers_; }  // layers whose FFN is on the GPU whole

  private:
    const SparseFfn& sparse_;
    Backend* hot_backend_;
    bool mask_hot_;
    std::vector<Layer> layers_;
    uint64_t hot_bytes_ = 0, cold_gate_bytes_ = 0;
    int device_layers_ = 0;
};

// Copies rows `rows` of `src` ([ne0, *], rows contiguous) into dst ([ne0, rows.size()], same type).
void gather_rows(const Tensor& src, const std::vector<int32_t>& rows, Tensor& dst);
// dst [cols.size(), ne1] of dst.type = columns `cols` of src [ne0, ne1] (any dequantizable type),
// re-quantized by quant/'s reference quantizer.
void gather_columns(const Tensor& src, const std::vector<int32_t>& cols, Tensor& dst);

// Bytes per neuron of each layer as HotColdFfn holds them: the model's gate and up rows, a row
// of the CPU's neuron-major ffn_down copy (down_cpu) and a column of the hot copy (down_gpu).
std::vector<NeuronBytes> hot_cold_neuron_bytes(const Model& model, GgmlType down_cpu, GgmlType down_gpu);

struct HotNeuronRequest {
    double sparsity = 0.5;     // the run's S: the neuron counts nearest to it rank the neurons
    uint64_t gpu_bytes = 0;    // for the hot copies
    GgmlType down_cpu = GgmlType::Q8_0, down_gpu = GgmlType::Q8_0;
    int64_t granule = 256;     // a multiple of down_gpu's block
    std::vector<bool> skip;    // per layer: its FFN is on the GPU whole (gpu_ffn_layers), no hot neuron
};

// Per layer: whether the placement puts its FFN on the GPU (its ffn_gate there). Those layers
// run their sparse FFN there whole and take no hot neurons; the others are split hot/cold.
std::vector<bool> gpu_ffn_layers(const Placement& placement, int n_layer);
// Hot counts per layer that save the most CPU bytes per token within gpu_bytes
// (predictor/hot_cold_split.h choose_hot_counts). FormatError: a profile of other layer shapes.
std::vector<int64_t> choose_hot_neurons(const Model& model, const ActivationProfile& profile,
                                        const HotNeuronRequest& request);

// The decode seconds per token of hot counts, as the cost model prices them (CostParams::hot_cold).
using HotColdPricer = std::function<double(const std::vector<HotColdCost>&)>;

// Hot counts the cost model prices fastest: choose_hot_neurons for request.gpu_bytes and for 1/2,
// 1/4 and 1/8 of it, and none (a hot range also costs two copies per layer and the GPU's small
// ops, which the byte count does not see). Ties go to fewer hot neurons. When `price` throws (a
// profile that cannot rate the placement): the counts for the whole room.
std::vector<int64_t> cheapest_hot_neurons(const Model& model, const ActivationProfile& profile,
                                          const HotNeuronRequest& request, const HotColdPricer& price);

// What a run or a plan says when the cost model keeps no hot neuron although some would fit.
inline constexpr const char* kNoHotRangePays =
    "the cost model prices the FFNs on the CPU faster without a hot range on the GPU (the copies and"
    " small GPU ops of a split cost more than its bytes save): no hot neuron placed";

// The runtime's load: stats from stats_path, hot counts `hot` (a placement file's) or, when
// empty, chosen for gpu_bytes (by `price` when set); the copies made. ArgumentError naming --gpu when there is no GPU,
// or --sparsity when sparse is null.
struct HotColdLoad {
    std::string stats_path;
    uint64_t gpu_bytes = 0;
    std::vector<int64_t> hot;
    HotColdPricer price;  // set: counts chosen by cheapest_hot_neurons (when `hot` is empty)
};
std::unique_ptr<HotColdFfn> load_hot_cold_ffn(const PlacedModel& placed, const SparseFfn* sparse, Backend* gpu,
                                              const HotColdLoad& load);

// The cost model's view of hot counts (offload/cost_model.h HotColdCost): per layer the count
// and the cold neurons' expected active fraction at the run's S (cold_active_fraction), from
// a built HotColdFfn, or from the stats for counts not yet loaded (strata plan). FormatError: a
// profile of other layer shapes; ArgumentError: counts for other than every layer.
std::vector<HotColdCost> hot_cold_costs(const HotColdFfn& hc);
std::vector<HotColdCost> hot_cold_costs(const Model& model, const ActivationProfile& profile, double sparsity,
                                        const std::vector<int64_t>& hot);

// One line for --verbose: the hot backend's bytes, hot neurons and the share of activations
// they carry, over all layers.
std::string hot_cold_report(const HotColdFfn& hc);

}  // namespace strata
