// Trained predictors of FFN activity (Deja Vu, Liu et al. 2023; PowerInfer): per layer a small
// low-rank network scores each FFN neuron from the FFN's normed input x, score =
// W2·relu(W1·x + b1) + b2 (a logit), and neuron i is predicted active when score_i > threshold.
// The sparse FFN then reads the gate rows of the predicted neurons only (engine/runtime/
// sparse_ffn.h). "Active" is CATS's |act(gate_i·x)| > t at the calibrated threshold of the
// sparsity S the predictors were trained for. Trained by predictor_train.h, stored by
// predictor_file.h. Immutable after loading; predict() may run on several threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

struct LayerPredictor {
    int64_t n_embd = 0, n_ff = 0, rank = 0;
    std::vector<float> w1;  // [rank][n_embd] row-major (the input standardization folded in)
    std::vector<float> b1;  // [rank]
    std::vector<float> w2;  // [n_ff][rank] row-major
    std::vector<float> b2;  // [n_ff]
    float threshold = 0;    // on the logit; chosen for the target recall on held-out tokens
    // Held-out measurements at `threshold` (the training run's): the share of active neurons
    // predicted, the predicted and the truly active share of (neuron, token) pairs.
    double recall = 0, predicted_fraction = 0, active_fraction = 0;

    // f32 weights read per token.
    uint64_t bytes() const { return 4 * static_cast<uint64_t>(w1.size() + b1.size() + w2.size() + b2.size()); }
    // scores [n][n_ff] of x [n][n_embd] (token-major rows).
    void scores(const float* x, int64_t n, float* out) const;
    // rows[0..m) = the predicted-active neurons of one token x [n_embd], ascending; returns m.
    // scratch: at least n_ff + rank floats. n_threads: OpenMP threads over the neurons (the
    // result does not depend on it).
    int64_t predict(const float* x, int32_t* rows, float* scratch, int n_threads = 1) const;
    // Throws FormatError naming `what` when the arrays do not have the shapes' sizes.
    void check_shapes(const std::string& what) const;
};

struct FfnPredictors {
    // The model it was trained on (engine/runtime checks these against a model it loads).
    std::string model_name;
    uint64_t model_file_bytes = 0;
    std::string model_header_hash;
    std::string text_name;     // the training text, for the record
    uint64_t n_tokens = 0;     // training + held-out tokens per layer
    double sparsity = 0;       // the S whose CATS thresholds define "active"
    double target_recall = 0;  // the held-out recall each layer's threshold was chosen for
    std::vector<LayerPredictor> layers;

    uint64_t bytes() const;  // f32 weights of every layer
};

}  // namespace strata
