// Sampling, context and thread flags shared by run, chat and serve, spelled as llama.cpp
// spells them so users' habits carry over.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/runtime/runtime.h"
#include "engine/runtime/session.h"
#include "engine/sampler/sampler_params.h"
#include "tools/sparsity_options.h"

namespace strata::cli {

struct EngineOptions {
    std::string model;
    int64_t n_ctx = 4096;   // -c; 0 = the model's training context
    int64_t n_batch = 256;  // -b
    int n_threads = 0;      // -t; 0 = physical cores
    std::string kv_type = "f16";
    SamplerParams sampler;
    bool seed_given = false;
    // Placement (offload): where the weights go.
    std::string gpu = "auto";  // --gpu auto|cuda|none|fake
    std::string gpu_mem;       // --gpu-mem 6G
    std::string ram_mem;       // --ram-mem 24G
    std::string plan;          // --plan FILE
    std::string placement = "plan";  // --placement plan|builtin (without --plan)
    bool reprofile = false;          // --reprofile
    std::string disk_io = "auto";
    bool verbose = false;
    SparsityFlags sparsity;    // --sparsity --stats

    SessionParams session_params() const;
    RuntimeOptions runtime_options() const;
};

// Adds -m, -c, -b, -t, --ctk, the placement flags (--gpu --gpu-mem --ram-mem --plan --placement
// --reprofile --disk-io --verbose), --sparsity --stats and the sampler flags (--temp --top-k --top-p --min-p --repeat-penalty
// --repeat-last-n --presence-penalty --frequency-penalty --seed).
void add_engine_options(CLI::App& cmd, EngineOptions& options);

}  // namespace strata::cli
