// AVX2 integer sum of a decoded i-quant / ternary block (iq_decode.h) with Q8_K quants: per 32
// elements maddubs(|q|, sign(x, q)) gives the pair sums, madd multiplies them by the two
// sub-block scales of 16; the int32 lanes are summed at the end. The same integer as
// iq_isum_scalar.
#include "kernels_cpu/iq_decode.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace strata::cpu {
namespace {

int32_t isum_avx2(const IqDecoded& w, const int8_t* x) {
    __m256i acc = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
        const __m256i q = _mm256_load_si256(reinterpret_cast<const __m256i*>(w.q + 32 * j));
        const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * j));
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(xv, q));
        // Lanes 0-7 hold the pairs of elements 32j..32j+15 (scale 2j), lanes 8-15 the rest.
        const __m256i sc = _mm256_setr_m128i(_mm_set1_epi16(w.sc[2 * j]), _mm_set1_epi16(w.sc[2 * j + 1]));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, sc));
    }
    const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
    return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
}

}  // namespace

IqIsumFn iq_isum_avx2() {
    return isum_avx2;
}

}  // namespace strata::cpu

#pragma GCC pop_options

#else  // not x86-64

namespace strata::cpu {
IqIsumFn iq_isum_avx2() {
    return nullptr;
}
}  // namespace strata::cpu

#endif
