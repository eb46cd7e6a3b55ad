// The calibration run behind `strata profile`: evaluates a text the way perplexity does (windows
// of n_ctx from an empty cache, BOS first) with every weight on one host backend, and records
// the activation statistics of predictor/activation_profile.h. The first part of the run
// (warmup_fraction of its tokens, at least one window) only fills the histograms; then each
// layer's thresholds for kNeuronCountSparsity are fixed from them and the rest of the run also
// counts, per neuron, the tokens where it is active at each threshold. Mixture-of-experts
// models: per layer, per expert the tokens routed to it over the whole run (their layers have
// no FFN neurons of their own: n_ff 0).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "predictor/activation_profile.h"
#include "engine/core/op_types.h"
#include "engine/tokenizer/vocab.h"

namespace strata {

class Backend;
class KvCache;
class LayerProgram;
class Model;

struct ProfileParams {
    int64_t n_ctx = 512;          // window
    int64_t n_batch = 512;        // tokens per forward pass
    int64_t max_tokens = 0;       // 0: every full window of the text
    double warmup_fraction = 0.25;
};

// Called after each window with the tokens done and the total.
using ProfileProgress = std::function<void(int64_t done, int64_t total)>;

// ArgumentError when the text has fewer than n_ctx tokens, or the backend is not a host one.
ActivationProfile profile_activations(const Model& model, Backend& backend, std::span<const TokenId> tokens,
                                      const ProfileParams& params, const ProfileProgress& progress = {});

// The pieces of the calibration run that the predictors' sample run (predictor_samples.h)
// shares: the number of windows of n_ctx tokens it evaluates (ArgumentError as above), one
// window from an empty cache with BOS first (after_batch(n) after each batch of n tokens), and
// the FFN activation as the statistics define it (in double, as the CPU kernels' references).
int64_t calibration_windows(size_t n_tokens, const ProfileParams& params);
void run_calibration_window(LayerProgram& program, KvCache& kv, const Vocab& vocab, std::span<const TokenId> tokens,
                            int64_t w, const ProfileParams& params, const std::function<void(int64_t)>& after_batch);
float calibration_activation(Activation act, float g);

}  // namespace strata
