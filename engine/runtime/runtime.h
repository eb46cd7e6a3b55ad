// Runtime: a model loaded for execution on this machine — its backends (the CPU, and a GPU when
// there is one), the placement of its weights inside the --gpu-mem and --ram-mem budgets (from a
// placement file, the planner on this machine's hardware profile, or the built-in placement),
// the weights loaded into their tiers, and the accounting `--verbose` prints. Backends are made
// by name (backends/builtin_backends.h). Every model-running tool (run, chat, serve, bench,
// plan, perplexity) builds one; sessions run on it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "engine/core/backend.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/session.h"
#include "engine/runtime/sparse_ffn.h"
#include "engine/runtime/hot_cold_ffn.h"
#include "offload/cost_model.h"
#include "offload/disk_stream.h"
#include "offload/hardware_profile.h"
#include "offload/placement.h"
#include "offload/placement_rules.h"
#include "offload/planner.h"

namespace strata {

struct RuntimeBudgets;  // runtime_budget.h

// --gpu as the runtime takes it: "auto" (the first GPU backend that can run here, else none),
// "none" (or "cpu"), or the name of a GPU backend this binary has (backends/builtin_backends.h:
// "cuda" when built, "fake"). UnsupportedError listing those for any other name.
std::string parse_gpu_choice(std::string_view text);

// How weights are placed when no placement file is given.
enum class Placer {
    Plan,     // the planner (offload/planner.h) on this machine's hardware profile
    Builtin,  // the built-in placement (offload/builtin_placement.h), from budgets alone
};

Placer parse_placer(std::string_view text);  // plan, builtin

enum class PinWeights { Auto, On, Off };

struct RuntimeOptions {
    std::string gpu = "auto";  // parse_gpu_choice's spelling
    uint64_t gpu_mem = 0;      // VRAM the process may hold; 0 = free VRAM less a margin
    uint64_t ram_mem = 0;      // resident weights + disk staging; 0 = available RAM less a margin
    std::string plan_path;     // a placement file; empty = `placer` places the weights
    Placer placer = Placer::Plan;
    // -ngl / -ot: inputs of whichever placer runs; refused (ArgumentError) with a placement file.
    PlacementRules rules;
    // Measure the hardware again even when the cached profile matches (engine/runtime/hardware.h).
    bool reprofile = false;
    // RAM weights registered with the GPU for direct prefill copies (PlacedModel::
    // register_ram_weights): On (--pin-weights), Off (--no-pin-weights), or Auto:
    // pins_ram_weights_by_default (runtime_budget.h).
    PinWeights pin_weights = PinWeights::Auto;
    // --ship-min-batch: session.gpu_prefill_min_tokens is the user's, not lowered to the cost
    // model's break-even (Runtime::set_ship_break_even).
    bool ship_min_fixed = false;
    // Measure the hardware when no profile is cached, also when nothing is planned (a placement
    // file, Placer::Builtin), so that cost_estimate() is known. Otherwise those use the cached
    // profile if there is one.
    bool want_estimate = false;
    DiskIo disk_io = DiskIo::Auto;
    int n_threads = 0;         // CPU threads; 0 = physical cores
    bool batch_invariant = true;  // --no-batch-invariant: BackendConfig::batch_invariant false
    SessionParams session;     // context and batch the budgets must hold
    RopeOverrides rope;        // --rope-scaling, --rope-scale, ...: over the file's RoPE
    SparsityOptions sparsity;  // --sparsity: the FFNs' activation sparsity (CPU backend only)
    // --hot-neurons: with sparsity, the FFNs stay off the GPU in the placement and the GPU's room
    // left after it holds each layer's most often active neurons (hot_cold_ffn.h).
    bool hot_neurons = false;
    bool load_weights = true;  // false: only make the placement (strata plan)
    bool no_mmap = false;      // --no-mmap: RAM weights copied out of the file mapping
    bool mlock = false;        // --mlock: RAM weights locked in memory
    // Where profiling and a fallback from the planner to the built-in placement are said (the
    // tools pass std::cerr); null: nowhere.
    std::ostream* log = nullptr;
    // How loading goes, from this thread: a step, its current item, and how far it is
    // ("profiling": item = what is measured, done = steps so far, total 0 = unknown until the
    // last call, which has done == total; "placing weights": layers; "reading weights": bytes).
    // When set, profiling steps come here instead of the log, and the RAM tier's weights are read
    // in during the load (weight_warmup.h) instead of during the first prompt. Null: neither.
    std::function<void(std::string_view step, std::string_view item, uint64_t done, uint64_t total)> progress;
};

class Runtime {
  public:
    // Loads and places `model_path`. Errors: FormatError (bad file, plan for another model),
    // BudgetError (budgets that cannot hold the minimum, naming it), SystemError. The planner's
    // other errors (and a failed profiling) fall back to the built-in placement, said on the log.
    Runtime(const std::string& model_path, const RuntimeOptions& options);
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    const Model& model() const { return *model_; }
    // The model as the planner sees it, with the KV rings of this run's sessions (batch size and
    // sequences: sliding-window layers keep window + n_batch cells each).
    TensorTable placement_table() const;
    // Only when the options said load_weights.
    const PlacedModel& placed() const { return *placed_; }
    // Its predicted speeds come from cost_estimate() when that is known.
    const Placement& placement() const { return placement_; }
    // "plan FILE", "planner (greedy)" ..., or "built-in".
    const std::string& placement_source() const { return placement_source_; }
    // The hardware profile the placement was planned (or estimated) with; without a GPU backend
    // its GPU half is empty. nullopt when none was cached or measured (see want_estimate).
    const std::optional<HardwareProfile>& hardware_profile() const { return profile_; }
    // The CPU and GPU the profile describes: the key of the calibration file.
    std::string machine_key() const;
    // Measured runs the cost model was fitted to (calibration.h); 0: default constants.
    int calibration_runs() const { return calibration_runs_; }
    // The cost model's terms for placement() with hardware_profile(), and the params they were
    // computed with (n_ctx_used, n_prompt from the session).
    const std::optional<CostEstimate>& cost_estimate() const { return estimate_; }
    const CostParams& cost_params() const { return cost_params_; }
    // The disk stream's settings: the profile's queue depth and block (narrowed to the staging
    // ring of two of the largest streamed tensor), or DiskStream's defaults without a profile.
    const DiskStreamOptions& disk_options() const { return disk_options_; }
    // How the planner chose, when it placed the weights.
    const std::optional<PlanReport>& plan_report() const { return plan_report_; }
    Backend& cpu() const { return *cpu_; }
    Backend* gpu() const { return gpu_.get(); }
    // A session sized by the options' SessionParams.
    std::unique_ptr<Session> new_session() const;
    // The self-draft of speculative decoding (speculate.h): a session of these weights that runs
    // only the FFN work placed on the GPU (SessionParams::gpu_ffn_only). Its KV cache is one of
    // the n_sequences the budgets hold (load with one more). ArgumentError when no FFN work is on
    // the GPU (the draft would be the model without FFNs); UnsupportedError for a mixture of
    // experts and when weights stream from disk.
    std::unique_ptr<Session> new_self_draft_session() const;
    // Those SessionParams as the runtime settled them: batch within the context, the GPU
    // staging limit and the sparsity set.
    const SessionParams& session_params() const { return options_.session; }

    // Bytes per tier, staging, KV, activations, peak VRAM and RSS: what --verbose prints.
    std::string accounting(const Session* session) const;
    uint64_t gpu_budget() const { return gpu_budget_; }
    // The FFNs' activation sparsity, or null (dense).
    const SparseFfn* sparse() const { return sparse_.get(); }
    // The hot neurons on the GPU, or null.
    const HotColdFfn* hot_cold() const { return hot_cold_.get(); }

  private:
    // The constructor's steps, in order (runtime.cpp; the placement's in runtime_placement.cpp).
    void make_gpu(const RuntimeOptions& options);
    int64_t settle_session();  // the batch within the context; returns the context
    void find_profile(const std::string& model_path, const TensorTable& table, std::ostream& log);
    void calibrate(int64_t n_ctx, std::ostream& log);
    void place_from_file(const TensorTable& table, int64_t kv_cells, const RuntimeBudgets& budgets);
    void place_weights(const TensorTable& table, int64_t kv_cells, const RuntimeBudgets& budgets, std::ostream& log);
    void predict_speeds(const TensorTable& table);
    // Whether RAM weights of ram_bytes are registered with the GPU (--pin-weights, its default).
    bool pins_ram_weights(bool ships, uint64_t ram_bytes) const;
    // The cost model's shipping terms: the batch and slots that ship, and whether RAM weights
    // of ram_bytes would be registered.
    void set_ship_params(const RuntimeBudgets& budgets, uint64_t ram_bytes);
    // Lowers the prompt batch from which host weights ship to the GPU (SessionParams::
    // gpu_prefill_min_tokens, 64 by default) to the smallest one whose pass the cost model
    // predicts faster shipped than multiplied where the weights are. Needs a profile.
    void set_ship_break_even(const TensorTable& table);
    void load_placed(const std::string& model_path, std::ostream& log);
    void set_staging_limit(const TensorTable& table, int64_t kv_cells, const RuntimeBudgets& budgets, std::ostream& log);
    // The hot copies made; the estimate priced with them (CostParams::hot_cold).
    void load_hot_neurons(const std::string& model_path, const TensorTable& table);

    RuntimeOptions options_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<Backend> cpu_;
    std::unique_ptr<Backend> gpu_;
    uint64_t gpu_budget_ = 0;          // what --gpu-mem promises for the whole process
    uint64_t rss_before_model_ = 0;    // resident bytes when the runtime started: not the budget's
    Placement placement_;
    std::string placement_source_;
    std::optional<HardwareProfile> profile_;
    int calibration_runs_ = 0;
    std::string machine_key_;
    CostParams cost_params_;
    std::optional<CostEstimate> estimate_;
    // A mixture of experts' routing frequencies from its stats file (none: uniform), which
    // placement_table() carries, so that every estimate of the placement assumes one routing.
    std::vector<std::vector<double>> expert_use_;
    std::optional<PlanReport> plan_report_;
    DiskStreamOptions disk_options_;
    std::unique_ptr<PlacedModel> placed_;
    std::unique_ptr<SparseFfn> sparse_;
    std::optional<FfnPredictors> predictors_;  // read before the placement (it counts them), then the SparseFfn's
    std::unique_ptr<HotColdFfn> hot_cold_;
};

}  // namespace strata
