// float -> IEEE binary16 and bfloat16 bit patterns, rounding to nearest even (subnormals and
// overflow to infinity handled), for writing synthetic F16/BF16 data and block scales.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace strata {

inline uint16_t half_from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7FFFFFFFu;
    if (abs >= 0x47800000u) {  // >= 65536, inf or nan
        return static_cast<uint16_t>(sign | (abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
    }
    if (abs < 0x38800000u) {  // below 2^-14: a subnormal half, in units of 2^-24
        float a;
        std::memcpy(&a, &abs, 4);
        auto m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));  // ties to even
        return static_cast<uint16_t>(sign | m);
    }
    uint32_t h = (abs - 0x38000000u) >> 13;  // rebias exponent 127 -> 15, keep 10 bits
    const uint32_t rest = abs & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent
    return static_cast<uint16_t>(sign | h);
}

inline uint16_t bf16_from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // nan
    return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace strata
