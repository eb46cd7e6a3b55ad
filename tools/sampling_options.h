// Sampling, context, thread and placement flags shared by the tools that run a model (run,
// chat, serve, bench, plan, perplexity), spelled as llama.cpp
// spells them so users' habits carry over.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/runtime/runtime.h"
#include "engine/runtime/session.h"
#include "engine/sampler/sampler_params.h"
#include "tools/llama_options.h"
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
    bool plan_given = false;   // --plan "" is an error, not "no plan"
    std::string placement = "plan";  // --placement plan|builtin (without --plan)
    bool reprofile = false;          // --reprofile
    int pin_weights = -1;            // --pin-weights 1, --no-pin-weights 0, neither -1 (auto)
    bool batch_invariant = true;     // --no-batch-invariant
    int64_t ship_min_batch = -1;     // --ship-min-batch; -1 = the cost model's break-even
    std::string disk_io = "auto";
    bool verbose = false;
    SparsityFlags sparsity;    // --sparsity --stats
    LlamaFlags llama;          // -ngl -ot -fa -ctv -ub --no-mmap --mlock --jinja -hf (llama_options.h)

    SessionParams session_params() const;
    RuntimeOptions runtime_options() const;
};

constexpr int64_t kMaxContext = int64_t{1} << 24;  // -c and -b: 16M tokens
constexpr int64_t kMaxThreadsFlag = 1 << 16;       // -t accepted, then lowered to the CPUs

// "-1" is random (llama.cpp's spelling), else 0 to 2^32 - 1.
uint32_t parse_seed(std::string_view text, std::string_view name);

// Adds the runtime's flags (with llama.cpp's, llama_options.h) and the sampler's (both below).
void add_engine_options(CLI::App& cmd, EngineOptions& options);
// -m, -c, -b, -t, --ctk, the placement flags (--gpu --gpu-mem --ram-mem --plan --placement
// --reprofile --disk-io --verbose) and --sparsity --stats: what a Runtime is made from
// (EngineOptions::runtime_options). Defaults are those `options` holds.
void add_runtime_options(CLI::App& cmd, EngineOptions& options);
// --temp --top-k --top-p --min-p --repeat-penalty --repeat-last-n --presence-penalty
// --frequency-penalty --seed.
void add_sampler_options(CLI::App& cmd, SamplerParams& sampler);

}  // namespace strata::cli
