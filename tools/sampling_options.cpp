// Shared engine flags (sampling_options.h).
#include "tools/sampling_options.h"

#include "tools/chat_options.h"

#include <cstdint>
#include <iostream>
#include <limits>

#include "backends/builtin_backends.h"
#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "engine/core/byte_size.h"
#include "tools/load_progress.h"
#include "tools/numbers.h"

namespace strata::cli {

uint32_t parse_seed(std::string_view text, std::string_view name) {
    const int64_t v = parse_int(text, name, -1, UINT32_MAX);
    return v < 0 ? SamplerParams::kRandomSeed : static_cast<uint32_t>(v);
}

SessionParams EngineOptions::session_params() const {
    SessionParams p;
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    const TypeTraits* t = find_type_traits_by_name(kv_type);
    if (!t) throw ArgumentError(cat("unknown KV cache type '", kv_type, "' (f16, f32, q8_0, q4_0)"));
    p.kv_type = t->type;
    return p;
}

RuntimeOptions EngineOptions::runtime_options() const {
    check_model_source(llama, model);
    note_input_file(model);  // no file this run writes may replace it
    RuntimeOptions r;
    r.gpu = parse_gpu_choice(gpu);
    if (!gpu_mem.empty()) r.gpu_mem = parse_size_flag(gpu_mem, "--gpu-mem");
    if (!ram_mem.empty()) r.ram_mem = parse_size_flag(ram_mem, "--ram-mem");
    if (!gpu_mem.empty() && r.gpu_mem == 0) throw ArgumentError("--gpu-mem 0: use --gpu none for no GPU");
    if (!ram_mem.empty() && r.ram_mem == 0) throw ArgumentError("--ram-mem must be more than 0");
    if (plan_given && plan.empty()) throw ArgumentError("--plan: the file name is empty");
    r.plan_path = plan;
    r.placer = parse_placer(placement);
    r.reprofile = reprofile;
    r.pin_weights = pin_weights < 0 ? PinWeights::Auto : pin_weights > 0 ? PinWeights::On : PinWeights::Off;
    r.batch_invariant = batch_invariant;
    r.log = &std::cerr;
    r.disk_io = parse_disk_io(disk_io);
    r.n_threads = cap_threads(n_threads);
    r.session = session_params();
    if (ship_min_batch >= 0) {
        r.session.gpu_prefill_min_tokens = ship_min_batch;
        r.ship_min_fixed = true;
    }
    r.sparsity = sparsity.options();
    r.hot_neurons = sparsity.hot_neurons;
    apply_llama_options(llama, kv_type, r);
    r.progress = load_progress();
    return r;
}

void add_engine_options(CLI::App& cmd, EngineOptions& o) {
    add_runtime_options(cmd, o);
    add_sampler_options(cmd, o.sampler);
}

void add_runtime_options(CLI::App& cmd, EngineOptions& o) {
    cmd.add_option("-m,--model", o.model, "GGUF model file (required)");
    cmd.add_option("-c,--ctx-size", o.n_ctx, "context size in tokens (0 = the model's)")
        ->capture_default_str()->check(int_in(0, kMaxContext));
    cmd.add_option("-b,--batch-size", o.n_batch, "prompt tokens per forward pass")
        ->capture_default_str()->check(int_in(1, kMaxContext));
    cmd.add_option("-t,--threads", o.n_threads, "CPU threads (0 = physical cores; more than the CPUs is lowered to them)")
        ->capture_default_str()->check(int_in(0, kMaxThreadsFlag));
    cmd.add_option("--ctk,--cache-type,--cache-type-k", o.kv_type, "-ctk: KV cache type: f16, f32, q8_0, q4_0")
        ->capture_default_str();
    add_llama_options(cmd, o.llama);
    cmd.add_option("--gpu", o.gpu, cat("GPU backend: auto, none, or one this strata has: ", builtin_backends().names(true),
                                        " (fake: a test device in host memory)"))
        ->capture_default_str();
    cmd.add_flag("!--no-batch-invariant", o.batch_invariant,
                 "allow GPU kernels whose results for a token depend on the tokens batched with it, where"
                 " one is faster; none is today (the batch-invariant GEMV is the fastest at every width),"
                 " so it changes nothing (docs/SERVE.md)");
    cmd.add_option("--gpu-mem", o.gpu_mem, "VRAM the process may hold, e.g. 6G (a bare number is MiB; default: free VRAM)");
    cmd.add_option("--ram-mem", o.ram_mem,
                   "RAM for resident weights, KV and disk staging, e.g. 24G; the rest streams from disk"
                   " (default: available RAM less 2 GiB)");
    cmd.add_option_function<std::string>(
        "--plan", [&o](const std::string& v) { o.plan = v; o.plan_given = true; },
        "placement file from `strata plan` (default: place with --placement)");
    cmd.add_option("--placement", o.placement,
                   "without --plan: plan (the planner on this machine's measured hardware profile) or"
                   " builtin (from the budgets alone)")
        ->capture_default_str();
    cmd.add_flag("--reprofile", o.reprofile,
                 "measure this machine again for the planner (cached in ~/.cache/strata/hardware.json;"
                 " STRATA_QUICK_PROFILE=1 measures briefly)");
    cmd.add_option("--disk-io", o.disk_io, "how DISK weights are read: auto, direct (O_DIRECT), mmap")
        ->capture_default_str();
    // No values (--pin-weights=0 would otherwise read as --pin-weights): disable_flag_override.
    CLI::Option* pin = cmd.add_flag_callback("--pin-weights", [&o] { o.pin_weights = 1; },
                                             "register the RAM weights with the GPU so prompt batches copy them"
                                             " without staging (pins their pages). Default: on when prompt batches"
                                             " ship RAM weights to the GPU and they take at most half the RAM")
                           ->disable_flag_override();
    cmd.add_flag_callback("--no-pin-weights", [&o] { o.pin_weights = 0; },
                          "never register the RAM weights (prompt batches copy them through staging)")
        ->disable_flag_override()
        ->excludes(pin);
    cmd.add_option("--ship-min-batch", o.ship_min_batch,
                   "prompt batches of at least N tokens copy RAM/DISK weights to the GPU and multiply them"
                   " there (0 = never; default: the smallest batch the cost model predicts faster so, at most"
                   " 64; llama.cpp: GGML_OP_OFFLOAD_MIN_BATCH)")
        ->check(int_in(0, kMaxContext));
    cmd.add_flag("-v,--verbose", o.verbose, "print the placement and memory accounting");
    add_sparsity_options(cmd, o.sparsity);
}

void add_sampler_options(CLI::App& cmd, SamplerParams& s) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    cmd.add_option("--temp", s.temperature, "temperature (0 = greedy)")->capture_default_str()
        ->check(real_in(-kInf, kInf));
    cmd.add_option("--top-k", s.top_k, "top-k (0 = off)")->capture_default_str()
        ->check(int_in(0, INT32_MAX));
    cmd.add_option("--top-p", s.top_p, "top-p (1 = off)")->capture_default_str()->check(real_in(0, 1));
    cmd.add_option("--min-p", s.min_p, "min-p (0 = off)")->capture_default_str()->check(real_in(0, 1));
    cmd.add_option("--repeat-penalty", s.repeat_penalty, "repeat penalty (1 = off)")
        ->capture_default_str()->check(real_in(-kInf, kInf));
    cmd.add_option("--repeat-last-n", s.repeat_last_n, "tokens the penalties look back on (-1 = all)")
        ->capture_default_str()->check(int_in(-1, INT32_MAX));
    cmd.add_option("--presence-penalty", s.presence_penalty, "presence penalty")
        ->capture_default_str()->check(real_in(-kInf, kInf));
    cmd.add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty")
        ->capture_default_str()->check(real_in(-kInf, kInf));
    cmd.add_option_function<std::string>(
           "-s,--seed", [&s](const std::string& v) { s.seed = parse_seed(v, "--seed"); },
           "random seed (default and -1: random)")
        ->check(int_in(-1, UINT32_MAX));
    add_grammar_options(cmd, s);
}

}  // namespace strata::cli
