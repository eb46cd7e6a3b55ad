// Run-time CPU feature detection (cpu_features.h).
#include "kernels_cpu/cpu_features.h"

#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <utility>

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__))
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace strata::cpu {
namespace {

// Counts distinct (package, core) pairs in /sys; 0 when the topology is not readable.
int count_physical_cores(int logical) {
    std::set<std::pair<std::string, std::string>> cores;
    for (int i = 0; i < logical; ++i) {
        const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(i) + "/topology/";
        std::ifstream pkg(base + "physical_package_id"), core(base + "core_id");
        std::string p, c;
        if (!(pkg >> p) || !(core >> c)) return 0;
        cores.emplace(p, c);
    }
    return static_cast<int>(cores.size());
}

#if defined(__x86_64__) || defined(__i386__)
// AMX-TILE and AMX-BF16 in CPUID, tile state enabled by the OS, and (Linux >= 5.16) this
// process's permission to use it: without the permission the first tile load faults.
bool detect_amx_bf16() {
    unsigned eax = 7, ebx = 0, ecx = 0, edx = 0;
    __asm__("cpuid" : "+a"(eax), "=b"(ebx), "+c"(ecx), "=d"(edx));  // ecx = 0: sub-leaf 0
    const bool amx_tile = (edx >> 24) & 1u, amx_bf16 = (edx >> 22) & 1u;
    if (!amx_tile || !amx_bf16) return false;
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));  // OSXSAVE is implied by AMX
    constexpr unsigned kXTileCfg = 1u << 17, kXTileData = 1u << 18;
    if ((xcr0_lo & (kXTileCfg | kXTileData)) != (kXTileCfg | kXTileData)) return false;
#if defined(__linux__)
    constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXFeatureXTileData = 18;
    unsigned long permitted = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0) return false;
    if (!(permitted & kXTileData)) {
        if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXFeatureXTileData) != 0) return false;
        if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0) return false;
    }
    return (permitted & kXTileData) != 0;
#else
    return true;
#endif
}
#endif

CpuFeatures detect() {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512vnni = __builtin_cpu_supports("avx512vnni");
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
    f.avxvnni = __builtin_cpu_supports("avxvnni");
#endif
    unsigned eax = 1, ebx = 0, ecx = 0, edx = 0;
    __asm__("cpuid" : "+a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx));
    f.f16c = (ecx >> 29) & 1u;
    f.amx_bf16 = detect_amx_bf16();
#endif
    f.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
    if (f.logical_cores <= 0) f.logical_cores = 1;
    const int physical = count_physical_cores(f.logical_cores);
    f.physical_cores = physical > 0 ? physical : f.logical_cores;
    return f;
}

}  // namespace

std::string CpuFeatures::to_string() const {
    std::string s;
    auto add = [&s](bool on, const char* name) {
        if (!on) return;
        if (!s.empty()) s += ' ';
        s += name;
    };
    add(avx512f, "avx512f");
    add(avx512bw, "avx512bw");
    add(avx512vl, "avx512vl");
    add(avx512vnni, "avx512vnni");
    add(avxvnni, "avxvnni");
    add(amx_bf16, "amx_bf16");
    add(avx2, "avx2");
    add(fma, "fma");
    add(f16c, "f16c");
    return s.empty() ? "scalar" : s;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = detect();
    return features;
}

}  // namespace strata::cpu
