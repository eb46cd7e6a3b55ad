// AVX2 twins of iq_decode.h's finish and integer sum. The finish turns four gathered 8-byte
// groups at a time into bytes (_mm256_sign_epi8 with the sign masks, or a bytewise subtract);
// the sum takes maddubs(|q|, sign(x, q)) pair sums and madd's them with the two sub-block scales
// of 16. Both give exactly the bytes / integer of the scalar versions.
#include "kernels_cpu/iq_decode.h"

#include <immintrin.h>

#include <cstring>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace strata::cpu {
namespace {

inline __m256i load256(const void* p) {
    return _mm256_load_si256(static_cast<const __m256i*>(p));
}

void finish_avx2(const IqGathered& g, IqDecoded& out) {
    const bool is_signed = g.mode == IqGathered::Mode::Signed;
    const __m256i one = _mm256_set1_epi8(1);
    for (int i = 0; i < 8; ++i) {
        const __m256i grid = load256(g.grid + 4 * i), mask = load256(g.mask + 4 * i);
        const __m256i q = is_signed ? _mm256_sign_epi8(grid, _mm256_or_si256(mask, one)) : _mm256_sub_epi8(grid, mask);
        _mm256_store_si256(reinterpret_cast<__m256i*>(out.q + 32 * i), q);
    }
    std::memcpy(out.sc, g.sc, sizeof(out.sc));
    out.dw = g.dw;
}

int32_t isum_avx2(const IqDecoded& w, const int8_t* x) {
    __m256i acc = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
        const __m256i q = load256(w.q + 32 * j);
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

IqFinishFn iq_finish_avx2() {
    return finish_avx2;
}

IqIsumFn iq_isum_avx2() {
    return isum_avx2;
}

}  // namespace strata::cpu

#pragma GCC pop_options
