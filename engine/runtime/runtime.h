// Runtime: a model loaded for execution on this machine — its backends (the CPU, and a GPU when
// there is one), the placement of its weights inside the --gpu-mem and --ram-mem budgets (from a
// placement file, or the built-in placement), the weights loaded into their tiers, and the
// accounting `--verbose` prints. run, chat and perplexity build one; sessions run on it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/backend.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/session.h"
#include "offload/disk_stream.h"
#include "offload/placement.h"

namespace strata {

enum class GpuChoice {
    Auto,  // CUDA when built in and a device is visible, else none
    Cuda,  // CUDA or an error
    None,  // CPU only
    Fake,  // the fake device (tests and CI: host memory that behaves like a GPU)
};

GpuChoice parse_gpu_choice(std::string_view text);  // auto, cuda, none, fake

struct RuntimeOptions {
    GpuChoice gpu = GpuChoice::Auto;
    uint64_t gpu_mem = 0;      // VRAM the process may hold; 0 = free VRAM less a margin
    uint64_t ram_mem = 0;      // resident weights + disk staging; 0 = available RAM less a margin
    std::string plan_path;     // a placement file; empty = the built-in placement
    DiskIo disk_io = DiskIo::Auto;
    int n_threads = 0;         // CPU threads; 0 = physical cores
    SessionParams session;     // context and batch the budgets must hold
    bool load_weights = true;  // false: only make the placement (strata plan)
};

class Runtime {
  public:
    // Loads and places `model_path`. Errors: FormatError (bad file, plan for another model),
    // BudgetError (budgets that cannot hold the minimum, naming it), SystemError.
    Runtime(const std::string& model_path, const RuntimeOptions& options);
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    const Model& model() const { return *model_; }
    // Only when the options said load_weights.
    const PlacedModel& placed() const { return *placed_; }
    const Placement& placement() const { return placement_; }
    Backend& cpu() const { return *cpu_; }
    Backend* gpu() const { return gpu_.get(); }
    // A session sized by the options' SessionParams.
    std::unique_ptr<Session> new_session() const;

    // Bytes per tier, staging, KV, activations, peak VRAM and RSS: what --verbose prints.
    std::string accounting(const Session* session) const;
    uint64_t gpu_budget() const { return gpu_budget_; }

  private:
    void make_gpu(const RuntimeOptions& options);

    RuntimeOptions options_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<Backend> cpu_;
    std::unique_ptr<Backend> gpu_;
    uint64_t gpu_budget_ = 0;          // what --gpu-mem promises for the whole process
    uint64_t gpu_context_bytes_ = 0;   // VRAM in use before the backend (context, other processes)
    Placement placement_;
    std::unique_ptr<PlacedModel> placed_;
};

}  // namespace strata
