// Internal to kernels_cpu: small AVX2 helpers shared by the AVX2 and AVX-512 kernel files. Only
// those files include it; everything here is compiled for AVX2 + FMA + F16C and runs only
// after kernel_variant.h has checked that the CPU has them.
#pragma once

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the merge source of unmasked
// operations, which -Wuninitialized reports inside the header at every inlined use. The
// pragma covers the header's own lines only; the kernels' code keeps every warning.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstddef>
#include <cstdint>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

// Software prefetch distance of the kernels, in bytes of weights ahead of the block being read
// (0 = off; -DSTRATA_QDOT_PREFETCH=0 for A/B runs). About one DRAM latency of one core's GEMV
// stream: the hardware prefetcher stops at 4 KiB page boundaries and restarts late.
#ifndef STRATA_QDOT_PREFETCH
#define STRATA_QDOT_PREFETCH 1
#endif

namespace strata::cpu::x86 {

inline constexpr int kPrefetchBytes = STRATA_QDOT_PREFETCH ? 2048 : 0;

// Prefetches `lines` cache lines starting kPrefetchBytes past p (never faults).
inline void prefetch_ahead(const void* p, int lines) {
    if constexpr (kPrefetchBytes > 0) {
        const char* a = static_cast<const char*>(p) + kPrefetchBytes;
        for (int i = 0; i < lines; ++i)
            _mm_prefetch(a + 64 * i, _MM_HINT_T0);
    }
}

// Exact f16 -> f32 (the same value as quant/half.h's fp16_to_fp32).
inline float f16(uint16_t h) {
    return _cvtsh_ss(h);
}

// 32 bytes from anywhere.
inline __m256i load256(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Sum of the 8 lanes in a fixed order.
inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// 32 bytes: the low nibbles of 16 bytes in lanes 0-15, their high nibbles in lanes 16-31
// (element order of the 32-element formats).
inline __m256i unpack_nibbles16(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

// 32 bytes, 0xFF in lane j where bit j of the little-endian 32-bit word is set.
inline __m256i expand_bits32(uint32_t bits) {
    const __m256i shuffle = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                               0x0202020202020202, 0x0303030303030303);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), shuffle);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
}

// The eight 6-bit scales and mins of a Q4_K / Q5_K block (blocks.h's unpack_scale_min_k4 for
// all sub-blocks at once): sub-block s in byte s of each little-endian word.
struct ScalesMinsK4 {
    uint64_t sc;
    uint64_t m;
};
inline ScalesMinsK4 unpack_scales_mins_k4(const uint8_t* packed) {
    uint32_t a, b, c;  // bytes 0-3, 4-7, 8-11
    __builtin_memcpy(&a, packed, 4);
    __builtin_memcpy(&b, packed + 4, 4);
    __builtin_memcpy(&c, packed + 8, 4);
    const uint32_t sc_lo = a & 0x3f3f3f3fu;
    const uint32_t m_lo = b & 0x3f3f3f3fu;
    const uint32_t sc_hi = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
    const uint32_t m_hi = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
    return {sc_lo | (static_cast<uint64_t>(sc_hi) << 32),
            m_lo | (static_cast<uint64_t>(m_hi) << 32)};
}

// 16 int16 lanes [m0, m0, m1, m1, ..., m7, m7] from eight bytes: paired with Q8_K's 16 bsums
// by madd it gives Σ m_s · (bsum_2s + bsum_2s+1) per sub-block s.
inline __m256i duplicate_mins16(uint64_t m) {
    const __m128i pairs = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm256_cvtepu8_epi16(
        _mm_shuffle_epi8(_mm_cvtsi64_si128(static_cast<int64_t>(m)), pairs));
}

}  // namespace strata::cpu::x86

#pragma GCC pop_options
#endif
