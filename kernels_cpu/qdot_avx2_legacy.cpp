// AVX2 dot products of the 32-element weight formats with Q8_0 / Q8_1 activations
// (qdot_legacy_x86.h): a block meets up to 4 activation rows; |w| · sign(x, w) through
// maddubs/madd gives the exact int32 block sum.
#include "kernels_cpu/qdot.h"

#include <type_traits>

#include "kernels_cpu/simd_x86.h"
#include "kernels_cpu/unpack_legacy_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include "kernels_cpu/qdot_legacy_x86.h"

namespace strata::cpu {
namespace {

// u8·s8 pairs summed to int16 (maddubs; no overflow for these weights), then pairs to int32.
struct Avx2 {
    static constexpr int kMaxCols = 4;
    static __m256i dot_u8s8(__m256i u, __m256i s) {
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
    }
};

}  // namespace

QDotFn qdot_avx2_legacy(GgmlType type) {
    return legacy_x86::dot_table<Avx2>(type);
}

}  // namespace strata::cpu

#pragma GCC pop_options
