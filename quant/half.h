// IEEE binary16 (f16) and bfloat16 (bf16) <-> float32 conversions, exact and branch-defined so
// that every Strata backend and the oracle agree bit for bit (docs/FORMATS.md §2.3).
#pragma once

#include <bit>
#include <cstdint>

namespace strata {

// Exact: every half (normal, subnormal, ±0, ±inf, NaN) maps to the float of the same value.
// NaN keeps its sign and payload (shifted into the top of the float mantissa), as numpy does;
// a signalling NaN is not quietened.
constexpr float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits = 0;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);  // rebias 15 -> 127
    } else if (mant == 0) {
        bits = sign;
    } else {
        // Subnormal: value = mant * 2^-24. Normalise so the leading one sits at bit 10.
        int32_t e = -14;
        while ((mant & 0x400u) == 0) {
            mant <<= 1;
            --e;
        }
        bits = sign | (static_cast<uint32_t>(e + 127) << 23) | ((mant & 0x3ffu) << 13);
    }
    return std::bit_cast<float>(bits);
}

// Round to nearest, ties to even; overflow goes to ±inf, underflow to subnormals / ±0.
// NaN keeps its sign and the top 10 payload bits (forced non-zero so it stays a NaN), as numpy's
// float16 cast does. fp32_to_fp16(fp16_to_fp32(h)) == h for all 65536 halves.
constexpr uint16_t fp32_to_fp16(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) {  // NaN
        uint32_t m = (a >> 13) & 0x3ffu;
        if (m == 0) m = 1;
        return static_cast<uint16_t>(sign | 0x7c00u | m);
    }
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (a < 0x38800000u) {  // below 2^-14: half subnormal or zero, in units of 2^-24
        if (a <= 0x33000000u) return sign;  // <= 2^-25 (the tie rounds to even, i.e. 0)
        const uint32_t e = a >> 23;
        const uint32_t m = (a & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;  // 14..24
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
        return static_cast<uint16_t>(sign | q);  // q == 0x400 is the smallest normal: still right
    }
    uint32_t h = ((((a >> 23) - 112u)) << 10) | ((a >> 13) & 0x3ffu);
    const uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
    return static_cast<uint16_t>(sign | h);
}

// Exact: bf16 is the top half of a float32.
constexpr float bf16_to_fp32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// ggml's reference rounding (docs/FORMATS.md §2.3): NaN -> quiet NaN with the same top bits;
// otherwise round to nearest, ties to even (overflow goes to ±inf).
constexpr uint16_t fp32_to_bf16(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace strata
