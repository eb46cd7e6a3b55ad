// The CUDA backend's registry entry (backend_registry.h): "cuda" on device 0, inside a process
// budget (--gpu-mem) that counts the context and whatever else already holds the device.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "engine/core/backend_registry.h"
#include "engine/core/byte_size.h"
#include "engine/core/error.h"
#include "kernels_cuda/cuda_backend.h"
#include "kernels_cuda/device_info.h"
#include "kernels_cuda/gpu_profile.h"

namespace strata::cuda {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
// VRAM the CUDA runtime takes after start-up: kernels it loads lazily at first launch.
constexpr uint64_t kLazyModuleBytes = 64 * kMiB;
// The least a budget must leave beyond the context for the model.
constexpr uint64_t kMinModelBytes = 256 * kMiB;

std::unique_ptr<Backend> make(const BackendConfig& config) {
    // What the process (its context) and any other process hold before the backend exists
    // counts against the budget: --gpu-mem bounds this process's whole VRAM use.
    const DeviceMemory mem = device_memory(0);
    CudaBackendOptions o;
    // config.batch_invariant is not read: false would allow a kernel that rounds a token
    // differently in a batch, and none pays (the tensor-core GEMV gives the same bits and is
    // slower than dp4a at every width since the thirty-seventh session; H200: 44 against 23.5 us,
    // q4_K 4096 x 11008, 8 tokens).
    // STRATA_CUDA_GEMV_CHUNKS=N (A/B measurements): GEMV chunks up to N tokens; 0: none.
    static const char* chunks = std::getenv("STRATA_CUDA_GEMV_CHUNKS");
    if (chunks != nullptr && *chunks != '\0') o.gemv_chunk_max_tokens = std::clamp(std::atoi(chunks), 0, kGemvChunkMaxTokens);
    o.context_bytes = mem.total_bytes - mem.free_bytes + kLazyModuleBytes;
    if (config.budget_bytes > 0) {
        if (config.budget_bytes <= o.context_bytes + kMinModelBytes) {
            throw BudgetError(cat("--gpu-mem ", format_bytes(config.budget_bytes), " leaves nothing for the model: the CUDA context",
                                  " (and other processes) already hold ", format_bytes(o.context_bytes), " of device 0; give at least ",
                                  format_bytes(o.context_bytes + kMinModelBytes), " or --gpu none"));
        }
        o.budget_bytes = config.budget_bytes - o.context_bytes;
        o.process_budget_bytes = config.budget_bytes;
    } else {
        o.process_budget_bytes = mem.total_bytes;
    }
    return std::make_unique<CudaBackend>(o);
}

CudaBackend& measured(Backend& backend) {
    auto* cuda_backend = dynamic_cast<CudaBackend*>(&backend);  // the entry measures what it made
    if (cuda_backend == nullptr) throw ArgumentError(cat("the cuda entry cannot measure a ", backend.name(), " backend"));
    return *cuda_backend;
}

GpuProfileOptions profile_options(const DeviceRateOptions& options) {
    GpuProfileOptions o;
    o.progress = options.progress;
    if (options.quick) {
        o.matrix_bytes = 32ull << 20;
        o.transfer_bytes = 16ull << 20;
        o.budget_per_step = std::chrono::duration<double>(0.01);
    }
    return o;
}

DeviceRates measure(Backend& backend, const DeviceRateOptions& options) {
    return measure_gpu_profile(measured(backend), profile_options(options));
}

double measure_gemv(Backend& backend, GgmlType type, const DeviceRateOptions& options) {
    return measure_gpu_gemv_gbs(measured(backend), type, profile_options(options));
}

}  // namespace

void register_cuda_backend(BackendRegistry& registry) {
    BackendEntry e;
    e.name = "cuda";
    e.description = "CUDA device 0 (one arena sized by --gpu-mem)";
    e.is_device = true;
    e.auto_choice = true;
    e.unavailable = [] { return list_devices().empty() ? std::string("no CUDA device is visible") : std::string(); };
    e.create = make;
    e.measure_rates = measure;
    e.measure_gemv = measure_gemv;
    registry.add(std::move(e));
}

}  // namespace strata::cuda
