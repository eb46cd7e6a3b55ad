// SparseFfn: activation sparsity of a gated FFN (CATS: Lee et al. 2024). Per layer, neuron i
// is skipped for a token when |act(gate_i·x)| <= the layer's threshold, the S-quantile of its
// calibrated |act(gate·x)| histogram (`strata profile`), so a fraction S of neuron evaluations
// is expected to be skipped. The gate is computed densely; a skipped neuron's rows of ffn_up
// and ffn_down are not read in decode. ffn_down's neuron i is a strided column in GGUF, so a
// neuron-major copy is made at load (re-quantized to the policy's type: its own cost is measured
// in docs/SPARSITY.md) where offload/sparse_down.h's rule says it pays; the other layers read
// ffn_down whole over the masked activations (no copy, no re-quantization). Batches run the dense products with the same mask (same function, no
// savings). The copy lives where the FFN does (RAM or the GPU: the backend's sparse ops run
// it); an FFN split between tiers or streamed from disk is refused. Optionally TEAL (Liu et al.
// 2024) on the FFN input too: the normed input's values below a per-layer threshold are set to
// zero before gate and up, in decode and batches alike. Immutable after construction; sessions
// share it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/buffer.h"
#include "engine/core/tensor.h"
#include "offload/sparse_down.h"
#include "predictor/activation_profile.h"
#include "predictor/ffn_predictor.h"
#include "quant/ggml_type.h"
#include "quant/input_major.h"

namespace strata {

class Backend;
class LayerProgram;
class Model;
class PlacedModel;
struct TensorTable;

struct SparsityOptions {
    double sparsity = -1;    // skipped fraction S in [0, 1); < 0: off (dense)
    std::string stats_path;  // empty: default_stats_path(model)
    SparseDownPolicy down;  // where decode keeps a neuron-major ffn_down copy, and its type
    // TEAL on the FFN input (--input-sparsity): this fraction of the normed input's values, the
    // smallest by magnitude (per-layer thresholds from the stats), is set to zero before gate
    // and up. 0: off. It measures the method's quality; decode still reads every gate byte.
    double input_sparsity = 0;
    // --predictors: trained predictors (ffn_predictors.h) choose which gate rows a CPU FFN's
    // decode reads; predictor_path empty: default_predictor_path(the stats path).
    bool predictors = false;
    std::string predictor_path;
    // --input-major: exact input-major copies (quant/input_major.h) of the Q4_K matrices a sparse
    // decode reads by input, on backends with input_major products (the CPU): ffn_down where the
    // down policy keeps no re-quantized copy (the active neurons' columns are read), and with
    // input_sparsity > 0 ffn_gate (the nonzero inputs' columns are read).
    bool input_major = false;
    bool enabled() const { return sparsity >= 0; }
};

// Where `strata profile` writes and --sparsity reads stats by default: M.stats beside the
// model (M = the model path without .gguf) when it exists there (or, for writing, when that
// folder is writable), else <cache>/strata/<file name>.stats (the hardware profile's folder).
std::string default_stats_path(const std::string& model_path, bool for_writing);

// Reads a stats file (FormatError on a bad one; SystemError naming `strata profile` when
// it is missing).
ActivationProfile read_activation_profile(const std::string& path);

// FormatError, naming both, when `profile` was measured on another model file.
void check_profile_for(const ActivationProfile& profile, const Model& model, const std::string& stats_path);

class SparseFfn {
  public:
    // ArgumentError: sparsity outside [0, 1). UnsupportedError: an FFN that is not gated, or
    // one not whole on one backend with the sparse ops. BudgetError: no room for the copy. FormatError: a profile whose layers do
    // not match the model.
    // input_sparsity: TEAL on the FFN input (SparsityOptions); ArgumentError outside [0, 1),
    // UnsupportedError for an FFN on a backend without the input mask (a GPU, for now).
    // input_major: SparsityOptions::input_major (layers whose FFN backend lacks the products keep
    // their other paths).
    SparseFfn(const PlacedModel& placed, const ActivationProfile& profile, double sparsity,
              SparseDownPolicy down = {SparseDownMode::Copy, GgmlType::Q8_0}, double input_sparsity = 0,
              bool input_major = false);

    double sparsity() const { return sparsity_; }
    GgmlType down_type() const { return down_.copy_type; }
    const SparseDownPolicy& down_policy() const { return down_; }
    int n_layer() const { return static_cast<int>(layers_.size()); }
    float threshold(int il) const { return layers_.at(static_cast<size_t>(il)).threshold; }
    double input_sparsity() const { return input_sparsity_; }
    // Layer il's |x| threshold for the FFN input, or < 0 when input sparsity is off.
    float input_threshold(int il) const { return layers_.at(static_cast<size_t>(il)).input_threshold; }
    // Whether layer il keeps a neuron-major copy (else decode reads its ffn_down whole).
    bool has_copy(int il) const { return layers_.at(static_cast<size_t>(il)).down_t.data != nullptr; }
    // ffn_down neuron-major [n_embd, n_ff] (row i = column i of ffn_down), in the FFN's memory;
    // an empty tensor where !has_copy(il).
    const Tensor& down_t(int il) const { return layers_.at(static_cast<size_t>(il)).down_t; }
    uint64_t down_t_bytes() const { return down_t_bytes_; }
    // Layer il's input-major copies of ffn_gate and ffn_down (in host memory), or null.
    const InputMajorQ4K* gate_input_major(int il) const { return input_major_of(layers_.at(static_cast<size_t>(il)).gate_im); }
    const InputMajorQ4K* down_input_major(int il) const { return input_major_of(layers_.at(static_cast<size_t>(il)).down_im); }
    uint64_t input_major_bytes() const { return input_major_bytes_; }
    int input_major_count() const { return input_major_count_; }  // matrices with a copy
    bool input_major_asked() const { return input_major_asked_; }
    uint64_t device_bytes() const { return device_bytes_; }  // of the copies on a GPU

    // Trained predictors for decode on backends with predicted_ffn (ffn_predictors.h checks
    // them against the model first). FormatError: layers or shapes that do not match.
    void set_predictors(FfnPredictors predictors);
    // Layer il's predictor, or null (none given, or the layer's FFN is not on a backend that
    // runs them: a GPU keeps the dense gate).
    const LayerPredictor* predictor(int il) const;
    const FfnPredictors* predictors() const { return predictors_ ? &*predictors_ : nullptr; }

  private:
    struct Layer {
        float threshold = 0;
        float input_threshold = -1;
        bool runs_predictor = false;  // the FFN's backend has predicted_ffn
        int64_t n_embd = 0, n_ff = 0;
        Tensor down_t;
        Buffer buffer;
        InputMajorQ4K gate_im, down_im;
        Buffer gate_im_buffer, down_im_buffer;
    };
    static const InputMajorQ4K* input_major_of(const InputMajorQ4K& w) { return w.data != nullptr ? &w : nullptr; }
    void make_layer_copy(Backend& backend, const Tensor& down, int il, Layer& s);
    void make_input_major(Backend& backend, const Tensor& w, const std::string& what, InputMajorQ4K& copy, Buffer& buffer);
    double sparsity_;
    SparseDownPolicy down_;
    double input_sparsity_;
    std::vector<Layer> layers_;
    uint64_t down_t_bytes_ = 0;
    uint64_t device_bytes_ = 0;
    uint64_t input_major_bytes_ = 0;
    int input_major_count_ = 0;
    bool input_major_asked_ = false;
    std::optional<FfnPredictors> predictors_;
};

// The whole load: stats from options.stats_path (or the default), checked against the model,
// then the SparseFfn with `predictors` (read here when options ask for them and none are given).
// Null when options are off. ArgumentError naming `strata profile` when S is outside [0, 1) or
// there are no stats.
std::unique_ptr<SparseFfn> load_sparse_ffn(const PlacedModel& placed, const std::string& model_path,
                                           const SparsityOptions& options,
                                           std::optional<FfnPredictors> predictors = std::nullopt);

// The trained predictors options ask for (--predictors: beside the stats; --predictor-file),
// read and checked against the model and S (ffn_predictors.h); nullopt when not asked for.
std::optional<FfnPredictors> load_predictors(const Model& model, const std::string& model_path,
                                             const SparsityOptions& options);

// Adds each layer's predictor bytes to its ffn_gate entry of `table`: they live in the FFN's
// memory (RAM), so placements leave room for them and --ram-mem counts them.
void add_predictor_bytes(TensorTable& table, const FfnPredictors& predictors);

// One line for --verbose: the sparsity, the thresholds' source, the neuron-major copy's bytes,
// and (with a program) the skipped fraction achieved per layer since its counts were reset.
std::string sparsity_report(const SparseFfn& sparse, const LayerProgram* program);

// Adds to every ffn_down entry of `table` that keeps a neuron-major copy under `options` (its
// down policy at its sparsity) the copy's bytes: --sparsity keeps it beside ffn_down in the same
// memory, so placements leave room for both.
void add_neuron_major_bytes(TensorTable& table, const SparsityOptions& options);

// The down policy a run uses: Auto becomes Copy where a kernel needs the copy in every layer
// (trained predictors read their candidates' rows from it). Hot neurons keep Auto: a cold part
// without the copy reads ffn_down whole, as the plain sparse decode does.
SparseDownPolicy effective_down_policy(const SparsityOptions& options);

// Fills dst [n_embd, n_ff] (down_type rows) with the columns of down [n_ff, n_embd] (any
// dequantizable type), re-quantized by quant/'s reference quantizer.
void make_neuron_major(const Tensor& down, Tensor& dst);

}  // namespace strata
