// The measured speeds of one CUDA device that the cost model needs (DeviceRates: the GPU half
// of offload's HardwareProfile), taken through a CudaBackend in about a second. Free of CUDA headers so
// engine/ may include it. Rates are in GB/s or GFLOP/s with G = 1e9.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/device_rates.h"
#include "kernels_cuda/cuda_backend.h"
#include "quant/ggml_type.h"

namespace strata::cuda {

// The device's rates in the terms the planner takes (engine/core/device_rates.h).
using GpuProfile = DeviceRates;

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

// The GEMV rate (weight GB/s, one token) of one `type`, as measure_gpu_profile measures each of
// options.types: for a model's type the profile lacks. UnsupportedError when the backend cannot
// multiply the type; BudgetError as measure_gpu_profile.
double measure_gpu_gemv_gbs(CudaBackend& backend, GgmlType type, const GpuProfileOptions& options = {});

}  // namespace strata::cuda
