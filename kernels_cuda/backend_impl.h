// Internal to kernels_cuda: the state behind CudaBackend (stream, cuBLAS handle, arena, staging,
// scratch buffers), shared by the backend's .cpp files, and the argument checks of its ops.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/core/op_checks.h"
#include "kernels_cuda/cuda_backend.h"
#include "kernels_cuda/launch.h"
#include "kernels_cuda/staging.h"

namespace strata::cuda {

struct CudaBackend::Impl {
    explicit Impl(const CudaBackendOptions& opts);
    ~Impl();

    // Device memory for `bytes` of scratch in `buf`, grown (never shrunk) on demand. Safe while
    // queued ops still use the old block: every user is on `stream`.
    void* scratch(ArenaBuffer& buf, uint64_t bytes, std::string_view what);
    // A device copy of a small host array for the next ops (ArgRing).
    template <typename T>
    const T* stage(const T* host, int64_t n) {
        return static_cast<const T*>(args->push(host, sizeof(T) * static_cast<size_t>(n), stream));
    }
    // Called by every op that may write device memory (all but matmul's q8 GEMV and the reads):
    // x_q8 may no longer match the x it was quantized from.
    void forget_quantized_x() { quantized_x.valid = false; }

    // Declaration order is destruction order reversed: the arena outlives every buffer.
    CudaBackendOptions options;
    int sm_count = 0;
    int compute_major = 0;
    uint64_t outside_arena = 0;  // device bytes cuBLAS holds for itself (measured)
    std::shared_ptr<DeviceArena> arena;
    cudaStream_t stream = nullptr;
    cublasHandle_t cublas = nullptr;
    ArenaBuffer cublas_workspace;
    std::unique_ptr<BulkStaging> bulk;
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
    ArenaBuffer x_f16;      // f16 activations of the cuBLAS path
    ArenaBuffer w_tile;     // f16 weight tile of the cuBLAS path
    ArenaBuffer attn_part;  // attention partials of split keys
    // Decode graph (begin_graph / end_graph).
    bool capturing = false;
    std::vector<ArenaBuffer> retired;  // scratch outgrown while recording
    cudaGraphExec_t graph_exec = nullptr;
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
void check_matmul(const Tensor& w, const Tensor& x, const Tensor& y);
void check_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                     const int32_t* positions, const AttentionParams& p, const Tensor& out);

}  // namespace strata::cuda
