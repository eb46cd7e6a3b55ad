// The engine flags llama.cpp users type, beyond the ones Strata always had: -ngl, -ot, -fa,
// -ctv, -ub, --no-mmap, --mlock, --jinja, -hf and the RoPE flags (--rope-scaling, --rope-scale,
// --rope-freq-base, --rope-freq-scale, --yarn-*). Each is mapped onto Strata's own settings
// (the placement rules, the KV type, the batch, the residency) when the runtime options are made.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "engine/runtime/runtime.h"

namespace strata::cli {

struct LlamaFlags {
    std::string gpu_layers;                    // -ngl N | auto | all
    std::vector<std::string> override_tensor;  // -ot REGEX=DEVICE[,...], repeatable
    std::string flash_attn = "auto";           // -fa on|off|auto: attention is always fused here
    std::string kv_type_v;                     // -ctv: must equal -ctk (one KV type)
    int64_t n_ubatch = 0;                      // -ub: tokens per forward pass (0: -b)
    bool no_mmap = false;
    bool mlock = false;
    bool jinja = false;                        // the GGUF's own chat template (chat, serve)
    bool swa_full = false;                     // --swa-full: full KV for sliding-window layers
    // --rope-scaling, --rope-scale, --rope-freq-base, --rope-freq-scale, --yarn-*: "" = the file's.
    std::string rope_scaling, rope_scale, rope_freq_base, rope_freq_scale, yarn_orig_ctx, yarn_ext_factor,
        yarn_attn_factor, yarn_beta_fast, yarn_beta_slow;
};

// -ngl "auto"/"all" -> -1, else an integer >= -1 (-1: no limit). ArgumentError otherwise.
int parse_gpu_layers(const std::string& text);
// on|off|auto (also 1|0|true|false); ArgumentError naming the flag otherwise.
std::string parse_flash_attn(const std::string& text);

void add_llama_options(CLI::App& cmd, LlamaFlags& flags);

// -hf (ArgumentError until downloads exist) or, without it, -m must be given (CLI::RequiredError).
void check_model_source(const LlamaFlags& flags, const std::string& model);

// Applies the flags to `r` (made from the rest of EngineOptions): the placement rules, the
// batch, the residency. `kv_type` is -ctk's value, which -ctv must match.
void apply_llama_options(const LlamaFlags& flags, const std::string& kv_type, RuntimeOptions& r);

// A byte size from the command line: "6G", "512M", "6GiB"; a bare number is MiB as in
// llama.cpp, said once on stderr.
uint64_t parse_size_flag(const std::string& text, const std::string& flag);

}  // namespace strata::cli
