// `strata profile --train-predictors`: after the calibration run, a second pass records the
// predictors' samples (engine/runtime/predictor_samples.h), each layer's predictor is trained
// (predictor/predictor_train.h) and the file is written beside the stats (M.pred), for
// `--sparsity S --predictors`.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/runtime/profile_run.h"

namespace strata::cli {

struct PredictorTrainFlags {
    bool train = false;         // --train-predictors
    double sparsity = 0.5;      // --predictor-sparsity: the S whose thresholds define "active"
    int64_t rank = 64;          // --predictor-rank
    double recall = 0.99;       // --predictor-recall: held-out recall each layer's threshold reaches
    int64_t tokens = 4096;      // --predictor-tokens: samples per layer
    int epochs = 10;            // --predictor-epochs
    std::string output;         // --predictor-out (default: default_predictor_path(stats))
};

void add_predictor_train_options(CLI::App& cmd, PredictorTrainFlags& flags);

// Before the long run: ArgumentError for values out of range, or flags given without
// --train-predictors.
void check_predictor_train_flags(const PredictorTrainFlags& flags, const CLI::App& cmd);

// Samples, training and the file; prints one line per layer group and the totals.
void train_predictors(const Model& model, Backend& backend, std::span<const TokenId> tokens, const ProfileParams& params,
                      const ActivationProfile& profile, const PredictorTrainFlags& flags, const std::string& stats_path,
                      const std::string& text_name);

}  // namespace strata::cli
