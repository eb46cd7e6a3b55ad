// CpuBackend's memory: aligned host allocations with byte accounting, and host copies
// (cpu_backend.h).
#include <algorithm>
#include <cstdlib>
#include <new>

#include "engine/core/error.h"
#include "engine/core/host_info.h"
#include "kernels_cpu/cpu_backend.h"

namespace strata::cpu {

Buffer CpuBackend::allocate(uint64_t bytes, std::string_view what) {
    constexpr uint64_t kAlign = 64;
    const uint64_t rounded = (std::max<uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded);
    if (p == nullptr) {
        throw BudgetError(cat("CPU backend: cannot allocate ", rounded, " bytes of host memory for ", what));
    }
    const uint64_t now = allocated_.fetch_add(rounded) + rounded;
    uint64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return Buffer(p, bytes, MemoryKind::Host, [this, rounded](void* q, uint64_t) {
        std::free(q);
        allocated_.fetch_sub(rounded);
    });
}

BackendMemory CpuBackend::memory() const {
    BackendMemory m;
    m.total_bytes = host_ram_total_bytes();
    m.free_bytes = host_ram_available_bytes();
    m.used_bytes = allocated_.load();
    m.peak_bytes = peak_.load();
    return m;
}

void CpuBackend::copy_in(const Tensor& src, Tensor& dst) { copy_host_tensor(src, dst); }

void CpuBackend::copy_out(const Tensor& src, Tensor& dst) { copy_host_tensor(src, dst); }

}  // namespace strata::cpu
