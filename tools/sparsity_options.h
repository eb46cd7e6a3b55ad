// The activation-sparsity flags of run, chat, bench and perplexity: --sparsity S (the fraction
// of FFN neurons skipped, thresholds calibrated by `strata profile`) and --stats FILE.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/runtime/sparse_ffn.h"

namespace strata::cli {

struct SparsityFlags {
    double sparsity = -1;
    std::string stats;
    std::string down_type = "auto";  // --sparse-down: auto, whole, or the copy's type
    double input_sparsity = 0;  // --input-sparsity (SparsityOptions::input_sparsity)
    bool input_major = false;   // --input-major (SparsityOptions::input_major)
    CLI::Option* sparsity_option = nullptr;
    bool hot_neurons = false;  // --hot-neurons (RuntimeOptions::hot_neurons)
    bool predictors = false;   // --predictors
    std::string predictor_file;

    // Off unless --sparsity was given; ArgumentError naming `strata profile` for S outside
    // [0, 1), or --stats, --predictors, --predictor-file, --input-sparsity or --input-major without --sparsity,
    // or predictors or --input-major with --hot-neurons, or --input-major with predictors.
    SparsityOptions options() const;
};

void add_sparsity_options(CLI::App& cmd, SparsityFlags& flags);

}  // namespace strata::cli
