// Portable primitives of the block codecs (codec.cuh): byte loads at any alignment, f16/bf16
// bits to float, rounded float ops that never contract into FMA, and dp4a. __host__ __device__
// so the GPU-free tests run the same code; C++17 (nvcc compiles this folder as CUDA 17).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define STRATA_HD __host__ __device__ __forceinline__
#else
#define STRATA_HD inline
#endif

namespace strata::cuda {

// ---- float ops in quant/'s reference order (it is built with -ffp-contract=off): a product
// that is rounded before it meets a sum must not become an FMA on the GPU.
STRATA_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

STRATA_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

STRATA_HD float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}

STRATA_HD float bits_to_float(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof(f));
    return f;
#endif
}

STRATA_HD uint32_t float_to_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
#endif
}

// Exact f16 -> f32 for every half (subnormals, inf, NaN).
STRATA_HD float half_to_float(uint16_t h) {
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(h));
#else
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));
    if (exp != 0) return bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
    // zero or subnormal: mant * 2^-24, exact in float
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
#endif
}

STRATA_HD float bf16_to_float(uint16_t b) {
    return bits_to_float(static_cast<uint32_t>(b) << 16);
}

// ---- loads of little-endian fields from block bytes (global or shared memory). Every field
// Strata reads as u16 sits at an even address (all block sizes but MXFP4's are even, and MXFP4
// has no u16 field); u32 loads may sit at any address.
STRATA_HD uint16_t load_u16(const uint8_t* p) {
#ifdef __CUDA_ARCH__
    return *reinterpret_cast<const uint16_t*>(p);
#else
    uint16_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
#endif
}

// Reads only the aligned words that hold bytes p..p+3, so it never touches memory past them.
STRATA_HD uint32_t load_u32(const uint8_t* p) {
#ifdef __CUDA_ARCH__
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uint32_t* w = reinterpret_cast<const uint32_t*>(a & ~uintptr_t{3});
    const uint32_t shift = static_cast<uint32_t>(a & 3u) * 8u;
    return shift == 0 ? w[0] : __funnelshift_r(w[0], w[1], shift);
#else
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
#endif
}

// n consecutive words from p (any address, 2-byte aligned or not): n + 1 aligned loads and n
// funnel shifts on the device. It may read up to 4 bytes past p + 4n, so only the GEMV's
// shared-memory stage (which has slack) uses it.
template <int N>
STRATA_HD void load_words(const uint8_t* p, uint32_t* w) {
#ifdef __CUDA_ARCH__
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const uint32_t* q = reinterpret_cast<const uint32_t*>(a & ~uintptr_t{3});
    const uint32_t shift = static_cast<uint32_t>(a & 3u) * 8u;
    uint32_t prev = q[0];
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const uint32_t next = q[i + 1];
        w[i] = __funnelshift_r(prev, next, shift);
        prev = next;
    }
#else
    std::memcpy(w, p, 4 * N);
#endif
}

// As load_words, from a 16-byte aligned p when kAligned (N a multiple of 4): 16-byte vector
// loads on the device, the same words. The caller knows the alignment for a whole launch (a
// Q4_K/Q5_K block in a row that starts aligned: 144 and 176 are multiples of 16), so no lane
// branches on it.
template <int N, bool kAligned>
STRATA_HD void load_words_a(const uint8_t* p, uint32_t* w) {
#ifdef __CUDA_ARCH__
    if constexpr (kAligned) {
        static_assert(N % 4 == 0, "whole 16-byte vectors");
#pragma unroll
        for (int i = 0; i < N / 4; ++i) {
            const uint4 v = reinterpret_cast<const uint4*>(p)[i];
            w[4 * i] = v.x;
            w[4 * i + 1] = v.y;
            w[4 * i + 2] = v.z;
            w[4 * i + 3] = v.w;
        }
        return;
    }
#endif
    load_words<N>(p, w);
}

// Σ of the four signed byte products of a and b, plus c.
STRATA_HD int dp4a(int a, int b, int c) {
#ifdef __CUDA_ARCH__
    return __dp4a(a, b, c);
#else
    for (int i = 0; i < 4; ++i) {
        c += static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i))) *
             static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i)));
    }
    return c;
#endif
}

// Byte i of a little-endian packed table of 8 signed values (no memory table: the same code
// runs on host and device without __constant__ data).
STRATA_HD int packed_i8(uint64_t table, int i) {
    return static_cast<int8_t>(static_cast<uint8_t>(table >> (8 * i)));
}

// IQ4_NL / IQ4_XS values {-127,-104,-83,-65,-49,-35,-22,-10, 1,13,25,38,53,69,89,113}.
constexpr uint64_t kIq4nlLo = 0xF6EADDCFBFAD9881ull;
constexpr uint64_t kIq4nlHi = 0x7159453526190D01ull;
STRATA_HD int iq4nl_value(int nib) {
    return packed_i8(nib < 8 ? kIq4nlLo : kIq4nlHi, nib & 7);
}

// MXFP4 doubled E2M1 values {0,1,2,3,4,6,8,12, 0,-1,-2,-3,-4,-6,-8,-12}.
constexpr uint64_t kMxfp4Lo = 0x0C08060403020100ull;
constexpr uint64_t kMxfp4Hi = 0xF4F8FAFCFDFEFF00ull;
STRATA_HD int mxfp4_value(int nib) {
    return packed_i8(nib < 8 ? kMxfp4Lo : kMxfp4Hi, nib & 7);
}

// MXFP4's E8M0 exponent halved (the value table is doubled): 2^(e - 128), exactly.
STRATA_HD float e8m0_half_to_float(uint8_t e) {
    return bits_to_float(e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23));
}

// 6-bit scale and min of sub-block s of the 12 packed bytes of Q4_K / Q5_K (docs/FORMATS.md §2.2).
STRATA_HD void scale_min_k4(const uint8_t* q, int s, int& sc, int& m) {
    if (s < 4) {
        sc = q[s] & 63;
        m = q[s + 4] & 63;
    } else {
        sc = (q[s + 4] & 0xF) | ((q[s - 4] >> 6) << 4);
        m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
    }
}

// Bits 0..3 of x moved to bit 4 of bytes 0..3 (the 5th bits of four Q5 quants).
STRATA_HD uint32_t spread_bits4(uint32_t x) {
    return ((x & 0xFu) * 0x00204081u & 0x01010101u) << 4;
}

}  // namespace strata::cuda
