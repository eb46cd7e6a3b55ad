// The CPU backend's registry entry (backend_registry.h): "cpu", always present.
#include <memory>

#include "engine/core/backend_registry.h"
#include "kernels_cpu/cpu_backend.h"

namespace strata::cpu {

void register_cpu_backend(BackendRegistry& registry) {
    BackendEntry e;
    e.name = "cpu";
    e.description = "the host CPU (AVX-512, AVX2 or scalar kernels)";
    e.create = [](const BackendConfig& config) -> std::unique_ptr<Backend> {
        return std::make_unique<CpuBackend>(config.n_threads);
    };
    registry.add(std::move(e));
}

}  // namespace strata::cpu
