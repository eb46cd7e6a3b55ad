// AVX-512 VNNI dot products of the 32-element weight formats with Q8_0 / Q8_1 activations
// (qdot_legacy_x86.h): one vpdpbusd gives the exact int32 block sum, and a weight block meets
// up to 8 activation rows (32 vector registers).
#include "kernels_cpu/qdot.h"

#if defined(__x86_64__)
#include <type_traits>

#include "kernels_cpu/simd_x86.h"
#include "kernels_cpu/unpack_legacy_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")

#include "kernels_cpu/qdot_legacy_x86.h"

namespace strata::cpu {
namespace {

// u8·s8 products summed in fours straight to int32 by one vpdpbusd.
struct Avx512Vnni {
    static constexpr int kMaxCols = 8;
    static __m256i dot_u8s8(__m256i u, __m256i s) {
        return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
    }
};

}  // namespace

QDotFn qdot_avx512_legacy(GgmlType type) {
    return legacy_x86::dot_table<Avx512Vnni>(type);
}

}  // namespace strata::cpu

#pragma GCC pop_options

#else  // not x86-64: no AVX-512 kernels

namespace strata::cpu {
QDotFn qdot_avx512_legacy(GgmlType) {
    return nullptr;
}
}  // namespace strata::cpu

#endif
