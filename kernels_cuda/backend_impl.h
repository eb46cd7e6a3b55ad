// Internal to kernels_cuda: the state behind CudaBackend (stream, cuBLAS handle, arena, staging,
// scratch buffers), shared by the backend's .cpp files, and the argument checks of its ops.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/core/op_checks.h"
#include "kernels_cuda/cuda_backend.h"
#include "kernels_cuda/launch.h"
#include "kernels_cuda/op_timer.h"
#include "kernels_cuda/staging.h"

namespace strata::cuda {

struct CudaBackend::Impl {
    explicit Impl(const CudaBackendOptions& opts);
    ~Impl();

    // Device memory for `bytes` of scratch in `buf`, grown (never shrunk) on demand. Safe while
    // queued ops still use the old block: every user is on `stream`.
    void* scratch(ArenaBuffer& buf, uint64_t bytes, std::string_view what);
    // A device copy of a small host array for the next ops (ArgRing); while a step graph is
    // recorded, the step's token/position (by pointer) or a copy that lives with the recording.
    template <typename T>
    const T* stage(const T* host, int64_t n) {
        return static_cast<const T*>(stage_bytes(host, sizeof(T) * static_cast<size_t>(n)));
    }
    const void* stage_bytes(const void* host, size_t bytes);
    // RoPE's launch arguments for n_tokens of head_dim: p checked (ArgumentError), positions
    // (a host array) and the per-pair tables staged (cuda_backend.cpp).
    RopeLaunch rope_launch(const int32_t* positions, int64_t n_tokens, int64_t head_dim, const RopeParams& p);
    // The device copy of the step's position for a kv_store at first_cell of n rows, or null
    // when the store is not the recorded step's.
    const int32_t* step_cell(int64_t first_cell, int64_t n) const;
    // Called by every op that may write device memory (all but matmul's q8 GEMV and the reads):
    // x_q8 may no longer match the x it was quantized from.
    void forget_quantized_x() { quantized_x.valid = false; }
    // The q8 activations of m rows of k (backend_matmul.cpp): xq [m][k] int8, then (16-byte
    // aligned) xds [m][k/32] (d, d·Σq), in the x_q8 scratch block `buf`.
    struct Q8Scratch {
        const void* buf;
        int8_t* xq;
        float* xds;
    };
    Q8Scratch q8_scratch(int64_t m, int64_t k);
    // x's q8 activations in the x_q8 scratch: the last op's when it quantized this very x, else
    // quantized now (backend_matmul.cpp).
    Q8Scratch quantized(const Tensor& x);
    // Weight rows per warp of a q8 GEMV over `rows` rows: the configured count, halved while the
    // launch would leave multiprocessors idle.
    int gemv_rows_per_warp(int64_t rows) const;
    // Whether an op writing y (RMSNorm, gated activation) should also quantize it for the GEMV
    // that reads it next: y is few rows of whole q8 blocks and reuse is on.
    bool fuse_q8(const Tensor& y) const;
    // The most tokens a product takes the q8 GEMV for (in chunks of 8 above gemv_max_tokens);
    // 0 when activations stay f32.
    int64_t gemv_q8_max_tokens() const;
    // Whether a product of m tokens takes the tensor-core GEMV (options.gemv_mma_min_tokens).
    bool use_gemv_mma(int64_t m) const;

    // Declaration order is destruction order reversed: the arena outlives every buffer.
    CudaBackendOptions options;
    int sm_count = 0;
    int compute_major = 0;
    size_t smem_optin = 0;  // shared memory a block may opt in to (attention_mma's limit)
    uint64_t outside_arena = 0;  // device bytes cuBLAS holds for itself (measured)
    std::shared_ptr<DeviceArena> arena;
    cudaStream_t stream = nullptr;
    // Weight shipping (ship_in / release_slot): the copies' stream, and per slot the event of
    // its last copy and of its last readers on `stream`.
    cudaStream_t copy_stream = nullptr;
    std::array<cudaEvent_t, Backend::kShipSlots> slot_copied{};
    std::array<cudaEvent_t, Backend::kShipSlots> slot_released{};
    cublasHandle_t cublas = nullptr;
    ArenaBuffer cublas_workspace;
    std::unique_ptr<BulkStaging> bulk;
    // Host ranges registered for direct copies (register_host_memory): begin -> end.
    std::map<uintptr_t, uintptr_t> registered;
    bool is_registered(const void* p, uint64_t bytes) const;
    // Queues one copy of a contiguous host tensor into `device` on `on`: pinned and registered
    // memory directly (the copy engine reads it in place), anything else through the bulk
    // staging chunks (its bytes are in them on return). True when the source is pinned memory
    // the caller may reuse only once the queued copy has run.
    bool upload_on(const Tensor& host, Tensor& device, cudaStream_t on);
    std::unique_ptr<ArgRing> args;
    ArenaBuffer x_q8;       // q8 activations of the GEMV
    // Which x x_q8 holds: q, k and v (gate and up) multiply the same x, quantized once. Host-side
    // and in op order, so it holds inside a graph recording too (the skipped quantization is
    // simply not recorded; begin/end/abort_graph forget it so no graph leans on an earlier one).
    struct QuantizedX {
        bool valid = false;
        const void* data = nullptr;
        std::array<int64_t, 4> ne{};
        std::array<uint64_t, 4> nb{};
        const void* buf = nullptr;  // x_q8's block when quantized (a regrown block is empty)
    } quantized_x;
    uint64_t scratch_epoch = 0;  // counts scratch() regrowths: a step graph names the old blocks
    ArenaBuffer x_f16;      // f16 activations of the cuBLAS path
    ArenaBuffer w_tile;     // f16 weight tile of the cuBLAS path
    ArenaBuffer attn_part;  // attention partials of split keys
    ArenaBuffer sparse;     // the sparse FFN ops' scratch (engine/core/sparse_scratch.h)
    // routed_expert_ffn's device tables of expert matrices, by their pointers (backend_experts.cpp).
    std::map<std::vector<const void*>, ArenaBuffer> expert_tables;
    // Host arrays of the batched ops (kv_store_rows, attention_rows), reused from step to step:
    // the sequences' cache addresses (K then V) and positions.
    std::vector<const uint8_t*> seq_caches;
    std::vector<int32_t> seq_positions;
    static constexpr size_t kMaxExpertTables = 4096;
    // Brackets an op for the op timer (a no-op unless STRATA_CUDA_OP_TIMES is set).
    OpScope time_op(const char* label) { return OpScope(timer.get(), stream, capturing, timer ? label : ""); }
    // Per-op GPU times (STRATA_CUDA_OP_TIMES=1), else null.
    std::unique_ptr<OpTimer> timer;
    // Decode graph (begin_graph / end_graph).
    bool capturing = false;
    std::chrono::steady_clock::time_point capture_started;  // begin_graph (op timer only)
    std::vector<ArenaBuffer> retired;  // scratch outgrown while recording
    cudaGraphExec_t graph_exec = nullptr;
    // Replayable decode steps (begin_step_graph / replay_step): per owner (each sequence's
    // executor, so that sequences taking turns keep theirs; at most kStepOwners) the recordings
    // of its step's parts, whose constant arguments share the owner's device buffer.
    struct StepRecording {
        cudaGraphExec_t exec = nullptr;
        size_t args_at = 0;     // where its constant arguments start in the owner's args_dev
        bool ready = false;
        uint64_t epoch = 0;     // scratch_epoch of the recording
    };
    struct StepOwner {
        ArenaBuffer args_dev;   // constant op arguments of the owner's recordings
        size_t args_end = 0;    // bytes of args_dev taken
        std::map<int, StepRecording> parts;
        uint64_t used = 0;      // step clock of the last record or replay (least recent goes first)
    };
    struct StepGraph {
        bool recording = false;
        const void* owner = nullptr;             // of the recording under way
        int part = 0;
        const int32_t* token_host = nullptr;     // the executor's arrays, matched by pointer
        const int32_t* position_host = nullptr;
        int32_t token = 0, position = 0;         // their values while recording
        ArenaBuffer slot;                        // device int32 [token, position], set per launch
        // The values the slot holds once the queued work ran (a launch with the same needs no set).
        bool slot_known = false;
        int32_t slot_token = 0, slot_position = 0;
        std::vector<uint8_t> args_host;          // gathered while recording, copied at its end
        std::map<const void*, StepOwner> by_owner;
        uint64_t clock = 0;
    } step;
    static constexpr size_t kStepOwners = 16;
    // The owner and recording being recorded (begin_step_graph made them).
    StepOwner& current_owner() { return step.by_owner.at(step.owner); }
    StepRecording& current_step() { return current_owner().parts.at(step.part); }
    // Queues the setting of the step slot, unless it will hold these values already.
    void set_slot(int32_t token, int32_t position);
    uint64_t graph_launches = 0;
    uint64_t graph_instantiations = 0;
};

// ---- argument checks (op_checks.cpp); ArgumentError / UnsupportedError with the shapes.
// t lives in device memory and its rows are contiguous whole blocks.
void check_device_rows(std::string_view op, std::string_view what, const Tensor& t);
// As check_device_rows, and t is f32.
void check_device_f32(std::string_view op, std::string_view what, const Tensor& t);
// Rows of t are evenly spaced (one stride from row to row over ne[1..3]), as cuBLAS needs.
bool rows_evenly_strided(const Tensor& t);
// Whether a sequence's cache can share the first's launch of the batched KV-store and attention
// kernels, which index every cache as the first: same type, shape and row stride, and the same
// 16-byte misalignment (the vectorized attention kernel checks the first's only).
bool caches_alike(const Tensor& a, const Tensor& first);
void check_matmul(const Tensor& w, const Tensor& x, const Tensor& y);
void check_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                     const int32_t* positions, const AttentionParams& p, const Tensor& out);

}  // namespace strata::cuda
