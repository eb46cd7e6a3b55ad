// Internal to kernels_cpu: unpacking of the 32-element weight formats into 32 int8 lanes,
// shared by the AVX2 and AVX-512 kernel files (compiled for AVX2 + FMA + F16C, like simd_x86.h).
#pragma once

#if defined(__x86_64__)
#include "kernels_cpu/simd_x86.h"
#include "quant/blocks.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace strata::cpu::x86 {

// Decoders: one weight block -> 32 int8 weights, signed (Signed = true, partner Q8_0) or
// unsigned (partner Q8_1, whose blocks carry s = d·Σq for the weight minimum m).
// The 5-bit quants 0..31 of a Q5_0 or Q5_1 block: the nibbles with bit i of qh as element i's fifth.
template <typename Block>
inline __m256i unpack_q5(const Block& b) {
    uint32_t qh;
    __builtin_memcpy(&qh, b.qh, sizeof(qh));
    const __m256i high = _mm256_and_si256(expand_bits32(qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(unpack_nibbles16(b.qs), high);
}

struct DecodeQ4_0 {
    using Block = BlockQ4_0;
    static constexpr bool Signed = true;
    static __m256i decode(const Block& b) {
        return _mm256_sub_epi8(unpack_nibbles16(b.qs), _mm256_set1_epi8(8));
    }
};

struct DecodeQ5_0 {
    using Block = BlockQ5_0;
    static constexpr bool Signed = true;
    static __m256i decode(const Block& b) { return _mm256_sub_epi8(unpack_q5(b), _mm256_set1_epi8(16)); }
};

struct DecodeQ8_0 {
    using Block = BlockQ8_0;
    static constexpr bool Signed = true;
    static __m256i decode(const Block& b) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    }
};

struct DecodeIq4Nl {
    using Block = BlockIq4Nl;
    static constexpr bool Signed = true;
    static __m256i decode(const Block& b) {
        const __m256i table = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
        return _mm256_shuffle_epi8(table, unpack_nibbles16(b.qs));
    }
};

struct DecodeQ4_1 {
    using Block = BlockQ4_1;
    static constexpr bool Signed = false;
    static __m256i decode(const Block& b) { return unpack_nibbles16(b.qs); }
};

struct DecodeQ5_1 {
    using Block = BlockQ5_1;
    static constexpr bool Signed = false;
    static __m256i decode(const Block& b) { return unpack_q5(b); }
};

}  // namespace strata::cpu::x86

#pragma GCC pop_options
#endif
