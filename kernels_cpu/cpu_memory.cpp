// CpuBackend's memory: aligned host allocations with byte accounting, and host copies
// (cpu_backend.h).
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>

#include "engine/core/error.h"
#include "engine/core/host_info.h"
#include "kernels_cpu/cpu_backend.h"

namespace strata::cpu {

namespace {

// Allocations this large (copies of weights made at load: neuron-major and input-major FFN
// matrices) are aligned to 2 MiB and asked for transparent huge pages where the kernel gives
// them on request (THP "madvise", Debian's default): the load that writes them takes 512 times
// fewer page faults (at 70B, faulting 15 GB of 4 KiB pages from 16 threads cost minutes of
// system time), and a decode reading them by columns fewer TLB misses.
constexpr uint64_t kHugeFrom = 32ull << 20;
constexpr uint64_t kHugePage = 2ull << 20;

}  // namespace

Buffer CpuBackend::allocate(uint64_t bytes, std::string_view what) {
    const uint64_t align = bytes >= kHugeFrom ? kHugePage : 64;
    const uint64_t rounded = (std::max<uint64_t>(bytes, 1) + align - 1) / align * align;
    void* p = std::aligned_alloc(align, rounded);
    if (p == nullptr) {
        throw BudgetError(cat("CPU backend: cannot allocate ", rounded, " bytes of host memory for ", what));
    }
    if (align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);  // advice: failure changes nothing
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
