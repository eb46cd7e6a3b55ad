// Which family of quantized dot-product kernels matmul uses: the f32 dequantize path, the scalar
// integer kernels, AVX2 or AVX-512 (VNNI). Chosen once from cpu_features(); tests and benchmarks
// may force one, in code or with the environment variable STRATA_CPU_KERNELS. The same choice
// picks the row kernels of the other ops (row_ops.h: norm, RoPE, activations, attention);
// Dequant uses their scalar table.
#pragma once

#include <string_view>

namespace strata::cpu {

enum class KernelVariant {
    Auto,     // the best the CPU supports (resolved, never active itself)
    Dequant,  // reference path: dequantize W to f32 and dot in f32 (every type)
    Scalar,   // integer dot products on quantized activations, plain C++ (the SIMD oracle)
    Avx2,     // AVX2 + FMA + F16C
    Avx512,   // AVX-512 F/BW/VL + VNNI (+ AVX2/FMA/F16C)
};

// "auto", "dequant", "scalar", "avx2", "avx512".
std::string_view kernel_variant_name(KernelVariant v);

// True if this CPU can run v (Auto, Dequant and Scalar always can).
bool kernel_variant_supported(KernelVariant v);

// Forces v for every CpuBackend in the process from the next matmul on; Auto restores the
// default. Throws UnsupportedError (naming the missing features) if the CPU cannot run v.
// Not meant to be called while another thread is inside a matmul (tests, benchmarks, startup).
void set_kernel_variant(KernelVariant v);

// The variant matmul uses now, never Auto. On first use it reads STRATA_CPU_KERNELS (one of
// the names above; unknown names and unsupported variants throw ArgumentError /
// UnsupportedError). Safe to call from any thread.
KernelVariant active_kernel_variant();

}  // namespace strata::cpu
