// FakeDeviceBackend: a stand-in GPU for machines without one (CI). Its memory is a host pool
// with a byte budget, marked MemoryKind::Device so that the CPU backend refuses it — a tensor
// that reaches the wrong backend fails as it would on a real GPU. Ops check that every tensor
// lies in the pool, then run on an inner CpuBackend. Transfers in and out are counted.
// Its matmul holds the scratch the CUDA backend's matmul holds (q8 activations for decode, f16
// activations and a weight tile for batches), and its sparse FFN ops the CUDA ops' scratch
// (engine/core/sparse_scratch.h), so a budget without room for it fails here too.
// Its memory() reads as the CUDA backend's does (budget, arena limit, used, peak); it has no
// context or library state to count. Registered as "fake" (builtin_backends.h).
// Used to test placement, the executor and streaming; never chosen for speed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/backend_registry.h"
#include "kernels_cpu/cpu_backend.h"

namespace strata {

struct FakeDeviceOptions {
    uint64_t budget_bytes = 1ull << 30;
    int n_threads = 1;
    bool quantize_activations = true;  // the inner CPU backend's matmul mode
    // Step graphs as CUDA's (Backend::begin_step_graph): a recording runs its ops at once and
    // keeps them, with the step's token and position read from a slot, to run again at each
    // replay; a host copy while recording is refused, as CUDA cannot record one. Off by default.
    bool step_graphs = false;
};

struct FakeDeviceStats {
    uint64_t used_bytes = 0;
    uint64_t peak_bytes = 0;
    uint64_t bytes_in = 0;   // host -> device
    uint64_t bytes_out = 0;  // device -> host
    uint64_t copies_in = 0;
    uint64_t copies_out = 0;
    uint64_t graph_launches = 0;  // step recordings ended and replays, as CUDA counts launches
};

class FakeDeviceBackend : public Backend {
  public:
    explicit FakeDeviceBackend(const FakeDeviceOptions& options = {});

    std::string_view name() const override { return "fake"; }
    MemoryKind memory_kind() const override { return MemoryKind::Device; }
    // total = budget = limit: the pool; used and peak its blocks.
    BackendMemory memory() const override;
    // Device name "fake-gpu", the CPU's weight types, the sparse FFN ops, step graphs when asked. Its op scratch
    // is the CUDA backend's (kDeviceOpScratchBytes), though what matmul_scratch() holds is sized
    // by the model: the runtime reserves as much on both, so a budget that holds here holds on CUDA.
    const BackendCapabilities& capabilities() const override { return capabilities_; }

    // BudgetError when the pool would pass its budget.
    Buffer allocate(uint64_t bytes, std::string_view what) override;
    void copy_in(const Tensor& src, Tensor& dst) override;
    void copy_out(const Tensor& src, Tensor& dst) override;

    void matmul(const Tensor& w, const Tensor& x, Tensor& y) override;
    void get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out) override;
    void rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y) override;
    void add(const Tensor& a, const Tensor& b, Tensor& y) override;
    void scale(Tensor& x, float s) override;
    void combine_rows(const Tensor& x, const RowCombine& c, Tensor& y) override;
    void gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y) override;
    void rope(Tensor& x, const int32_t* positions, const RopeParams& params) override;
    void kv_store(const Tensor& src, Tensor& cache, int64_t first_cell) override;
    void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                   const int32_t* positions, const AttentionParams& params, Tensor& out) override;
    void softcap(Tensor& x, float cap) override;
    // The CPU's ops on pool tensors; args.counts, when given, must lie in the pool (as on CUDA).
    int64_t thresholded_gated_activation(const Tensor& gate, const Tensor& up, Activation act, float threshold,
                                         Tensor& y) override;
    int64_t sparse_gated_ffn(const SparseFfnArgs& args, Tensor& y) override;
    int64_t sparse_gated_activation(const SparseFfnArgs& args, Tensor& h) override;
    void expert_ffn(const ExpertFfnArgs& args, Tensor& y) override;
    // As CUDA's rule: quantized matrices, one type and width per matrix across the experts,
    // whole 32-blocks, at most kCudaRouteMaxExperts experts. Recorded in step graphs.
    bool routes_experts(std::span<const ExpertRef> experts, int64_t n_used, Activation act) const override;
    void routed_expert_ffn(const RoutedExpertFfnArgs& args, Tensor& y) override;

    // With FakeDeviceOptions::step_graphs (fake_step_graphs.cpp); the sparse ops are not
    // recorded (UnsupportedError).
    void begin_step_graph(StepGraphId id, const int32_t* token, const int32_t* position) override;
    bool replay_step(StepGraphId id, int32_t token, int32_t position) override;
    void end_graph() override;
    void abort_graph() override;

    FakeDeviceStats stats() const;
    uint64_t budget_bytes() const { return budget_; }

    // The CUDA backend's defaults (kernels_cuda/cuda_backend.h: gemv_max_tokens, gemm_tile_bytes,
    // and the tile's row alignment): the scratch sizes follow from them.
    static constexpr int64_t kCudaGemvMaxTokens = 8;
    static constexpr uint64_t kCudaGemmTileBytes = 64ull << 20;
    static constexpr int64_t kCudaTileRowAlign = 64;
    static constexpr int64_t kCudaRouteMaxExperts = 256;  // kernels_cuda/launch.h kRouteMaxExperts

  private:
    // Runs op now and, while a step graph records, again at each replay of it.
    void run(std::function<void()> op);
    // A host array of n ids an op reads: while recording, the step's token or position array
    // becomes the slot (read at replay), any other a copy kept with the recording.
    const int32_t* ids_arg(const int32_t* ids, int64_t n);
    // While recording, whether a one-row kv_store at first_cell is the step's position.
    bool at_step_position(int64_t first_cell, int64_t n) const;
    // While recording: ArgumentError for a host copy (no graph can hold one), UnsupportedError
    // for an op this device does not record (CUDA does).
    void refuse_while_recording(std::string_view what) const;
    void not_recorded(std::string_view op) const;

    void scratch(Buffer& buf, uint64_t bytes, std::string_view what);
    void matmul_scratch(const Tensor& w, int64_t m);
    // t as a host view for the inner backend, after checking it lies in the pool.
    Tensor inner(const Tensor& t, std::string_view op) const;
    bool owns(const void* p, uint64_t bytes) const;

    uint64_t budget_;
    cpu::CpuBackend cpu_;
    mutable std::mutex mutex_;
    std::map<uintptr_t, uint64_t> blocks_;  // start -> bytes
    FakeDeviceStats stats_;
    Buffer x_q8_, x_f16_, w_tile_;  // matmul scratch, as the CUDA backend holds it
    Buffer sparse_;                 // the sparse FFN ops' scratch, likewise
    BackendCapabilities capabilities_;
    // Step graphs: the recordings by (owner, part), the one under way, the slot.
    struct Recording {
        std::vector<std::function<void()>> ops;
        std::vector<std::shared_ptr<std::vector<int32_t>>> arrays;  // host arrays copied for them
        bool ready = false;
    };
    std::map<std::pair<const void*, int>, Recording> recordings_;
    Recording* recording_ = nullptr;
    const int32_t* token_host_ = nullptr;
    const int32_t* position_host_ = nullptr;
    int32_t slot_[2] = {0, 0};  // token, position
};

// Adds "fake" to `registry`: a FakeDeviceBackend of BackendConfig::budget_bytes (1 GiB when 0),
// whose rates are the host CPU's made faster (so the planner uses it as it would a GPU).
void register_fake_backend(BackendRegistry& registry);

}  // namespace strata
