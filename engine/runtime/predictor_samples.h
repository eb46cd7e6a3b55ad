// The training samples of the FFN activity predictors (`strata profile --train-predictors`):
// a second pass of the calibration run (profile_run.h) that records, per layer and token, the
// FFN's normed input and which neurons are active at the profile's CATS threshold for the
// sparsity S the predictors are for. Every weight on one host backend, as the profile.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/runtime/profile_run.h"
#include "predictor/predictor_train.h"

namespace strata {

// Per layer (model order) the samples of the first max_tokens tokens of the calibration
// windows. Memory: max_tokens · (4·n_embd + n_ff) bytes per layer. ArgumentError: a
// mixture-of-experts model (no FFN neurons of its own), a profile of another layer count,
// sparsity outside [0, 1), max_tokens < 10, or the errors of profile_activations.
std::vector<PredictorSamples> collect_predictor_samples(const Model& model, Backend& backend,
                                                        std::span<const TokenId> tokens, const ProfileParams& params,
                                                        const ActivationProfile& profile, double sparsity,
                                                        int64_t max_tokens, const ProfileProgress& progress = {});

}  // namespace strata
