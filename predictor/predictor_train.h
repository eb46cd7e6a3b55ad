// Training of one layer's FFN activity predictor (ffn_predictor.h) from calibration samples:
// pairs (the FFN's normed input x, which neurons were active). The first part of the samples
// trains (mini-batch Adam on a binary cross-entropy whose positive terms weigh more, so recall
// is favoured); the last part (held out, later tokens of the text) picks the decision threshold
// that reaches the target recall and measures recall and the predicted fraction there.
// Deterministic for a seed; OpenMP threads through Eigen's matrix products.
#pragma once

#include <cstdint>
#include <vector>

#include "predictor/ffn_predictor.h"

namespace strata {

struct PredictorSamples {
    int64_t n_embd = 0, n_ff = 0;
    std::vector<float> x;         // [n][n_embd], token-major
    std::vector<uint8_t> active;  // [n][n_ff], 1 where the neuron was active
    int64_t n() const { return n_embd > 0 ? static_cast<int64_t>(x.size()) / n_embd : 0; }
};

struct PredictorTrainOptions {
    int64_t rank = 64;
    int epochs = 10;
    int64_t batch = 128;
    float learning_rate = 2e-3f;
    float positive_weight = 2.0f;  // weight of the active neurons' loss terms
    double target_recall = 0.99;   // of the held-out active (neuron, token) pairs
    double holdout = 0.2;          // the last fraction of the samples
    uint32_t seed = 1;
};

// ArgumentError: fewer than 10 samples, sizes that do not match, options out of range.
LayerPredictor train_predictor(const PredictorSamples& samples, const PredictorTrainOptions& options);

// The largest threshold t such that at least `target_recall` of `positive_scores` are > t
// (the scores of the truly active pairs); reorders the vector. Empty: +infinity's neighbour
// below, so nothing is predicted.
float threshold_for_recall(std::vector<float>& positive_scores, double target_recall);

}  // namespace strata
