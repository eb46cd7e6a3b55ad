// What the CPU can do, detected once at run time. The fast kernels pick their variant from
// this (AVX-512 with VNNI, AVX2, scalar), so one binary runs on every x86-64 machine; the
// oneDNN prefill path (dnnl_matmul.h) asks for AMX-BF16.
#pragma once

#include <string>

namespace strata::cpu {

struct CpuFeatures {
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512vnni = false;
    bool avxvnni = false;
    // AMX tiles with BF16 multiply, usable by this process: CPUID.(7,0):EDX bits 24 and 22, the
    // OS enables the tile state in XCR0 (bits 17, 18), and on Linux the process holds the
    // XTILEDATA permission (detection requests it once with arch_prctl(ARCH_REQ_XCOMP_PERM)).
    bool amx_bf16 = false;
    int logical_cores = 1;
    int physical_cores = 1;  // best effort from /sys; falls back to logical_cores

    // "avx512f avx512bw avx512vnni amx_bf16 avx2 fma f16c" (only the present ones).
    std::string to_string() const;
};

// Detected once; safe to call from any thread.
const CpuFeatures& cpu_features();

}  // namespace strata::cpu
