// The registry of this binary's backends (builtin_backends.h).
#include "backends/builtin_backends.h"

#include "backends/fake_device.h"
#include "kernels_cpu/cpu_backend.h"
#if STRATA_HAVE_CUDA
#include "kernels_cuda/cuda_backend.h"
#endif

namespace strata {

const BackendRegistry& builtin_backends() {
    static const BackendRegistry registry = [] {
        BackendRegistry r;
        cpu::register_cpu_backend(r);
#if STRATA_HAVE_CUDA
        cuda::register_cuda_backend(r);
#endif
        register_fake_backend(r);
        return r;
    }();
    return registry;
}

}  // namespace strata
