// The measured speeds of one CUDA device that the cost model needs (the GPU half of offload's
// HardwareProfile), taken through a CudaBackend in about a second. Free of CUDA headers so
// engine/ may include it. Rates are in GB/s or GFLOP/s with G = 1e9.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kernels_cuda/cuda_backend.h"
#include "quant/ggml_type.h"

namespace strata::cuda {

struct GpuProfile {
    std::string name;  // cudaDeviceProp::name, e.g. "NVIDIA H100 80GB HBM3"
    uint64_t total_bytes = 0;
    double read_gbs = 0;                     // device memory: a large copy, (read + write) bytes / s
    std::map<std::string, double> gemv_gbs;  // ggml type name -> weight bytes/s, 1 token
    double h2d_gbs = 0, d2h_gbs = 0;         // pinned host memory
    double transfer_latency_us = 0;          // one small copy and its synchronisation
    // Fixed costs, µs: one small kernel (an add of a 4096-float row) in a stream of them, the
    // same recorded as a CUDA graph step (capture, in-place update, launch), and what q4_K GEMVs
    // of 4.7 and 0.6 MB take beyond their bytes at gemv_gbs["q4_K"].
    double op_us = 0;
    double graph_node_us = 0;
    double gemv_floor_us = 0;
    double gemv_tiny_floor_us = 0;
    double prefill_gflops = 0;               // q4_K matmul of a prefill batch, 2 FLOP per weight
};

struct GpuProfileOptions {
    // The GEMV matrix and each copy buffer; less when the backend's arena lacks room (a third
    // of its largest free block at most).
    uint64_t matrix_bytes = 256ull << 20;
    uint64_t transfer_bytes = 64ull << 20;  // each host <-> device copy
    int prefill_tokens = 512;
    std::vector<GgmlType> types{GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0,
                                GgmlType::Q5_0, GgmlType::Q5_K, GgmlType::F16};
    std::chrono::duration<double> budget_per_step{0.1};  // timing of one rate, after a warm-up
    // Called before each step ("gpu read", "gpu gemv q4_K" ...), from this thread.
    std::function<void(std::string_view step)> progress;
};

// Measures `backend`'s device. Everything it allocates in the arena is returned before it
// returns, except the scratch the backend's matmul keeps (it grows that on first use anyway).
// Types the backend cannot multiply are left out of gemv_gbs. Calls come from the backend's
// thread (Backend's rule). SystemError on CUDA failures.
GpuProfile measure_gpu_profile(CudaBackend& backend, const GpuProfileOptions& options = {});

}  // namespace strata::cuda
