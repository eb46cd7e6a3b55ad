// fp16 / bf16 conversions (quant/half.h): exhaustive over all 65536 halves, and float32 -> half
// rounding checked against the compiler's own _Float16 conversion on random and edge bit patterns.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "quant/half.h"

namespace strata {
namespace {

bool is_half_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// An independent value for a half: sign * mantissa * 2^exponent in double.
double half_value(uint16_t h) {
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exp == 0) return sign * std::ldexp(mant, -24);
    if (exp == 31) return mant ? NAN : sign * INFINITY;
    return sign * std::ldexp(mant | 0x400, exp - 25);
}

TEST(QuantFp16, AllHalvesConvertExactlyAndRoundTrip) {
    for (uint32_t i = 0; i < 65536; ++i) {
        const auto h = static_cast<uint16_t>(i);
        const float f = fp16_to_fp32(h);
        if (is_half_nan(h)) {
            ASSERT_TRUE(std::isnan(f)) << std::hex << i;
            // Payload and sign kept in the top of the float mantissa (numpy does the same).
            ASSERT_EQ(std::bit_cast<uint32_t>(f), ((i & 0x8000u) << 16) | 0x7f800000u | ((i & 0x3ffu) << 13));
        } else {
            ASSERT_EQ(static_cast<double>(f), half_value(h)) << std::hex << i;
            ASSERT_EQ(std::signbit(f), (i & 0x8000u) != 0) << std::hex << i;
        }
        ASSERT_EQ(fp32_to_fp16(f), h) << "round trip of half 0x" << std::hex << i;
    }
}

// Compares with the compiler's float -> _Float16 conversion (libgcc soft-float, round to nearest
// even), which quietens NaN; for NaN only NaN-ness and sign are compared.
void expect_matches_compiler(uint32_t bits) {
    const float f = std::bit_cast<float>(bits);
    const uint16_t ours = fp32_to_fp16(f);
    const uint16_t theirs = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    if (std::isnan(f)) {
        ASSERT_TRUE(is_half_nan(ours)) << std::hex << bits;
        ASSERT_EQ(ours & 0x8000u, theirs & 0x8000u) << std::hex << bits;
    } else {
        ASSERT_EQ(ours, theirs) << "float bits 0x" << std::hex << bits;
    }
}

TEST(QuantFp16, Fp32ToFp16MatchesCompilerOnRandomBits) {
    std::mt19937 rng(1234);
    for (int i = 0; i < 2'000'000; ++i) expect_matches_compiler(rng());
}

TEST(QuantFp16, Fp32ToFp16MatchesCompilerNearEveryHalf) {
    // Every half, its neighbours, and the exact midpoints between consecutive halves (the ties).
    for (uint32_t i = 0; i < 0x7c00; ++i) {
        const uint32_t bits = std::bit_cast<uint32_t>(fp16_to_fp32(static_cast<uint16_t>(i)));
        const double mid = (half_value(static_cast<uint16_t>(i)) + half_value(static_cast<uint16_t>(i + 1))) / 2;
        const uint32_t mid_bits = std::bit_cast<uint32_t>(static_cast<float>(mid));
        for (uint32_t sign : {0u, 0x80000000u}) {
            for (uint32_t b : {bits, bits + 1, bits - 1, mid_bits, mid_bits + 1, mid_bits - 1}) {
                expect_matches_compiler(b | sign);
            }
        }
    }
}

TEST(QuantFp16, EdgeValues) {
    EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
    EXPECT_EQ(fp32_to_fp16(65519.99f), 0x7bff);
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // the tie goes to even: inf
    EXPECT_EQ(fp32_to_fp16(-1e9f), 0xfc00);
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
    EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
    EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
    EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(fp16_to_fp32(0x03ff), std::ldexp(1023.0f, -24));
    // A NaN whose payload lives only in the low float bits must stay a NaN.
    EXPECT_TRUE(is_half_nan(fp32_to_fp16(std::bit_cast<float>(0x7f800001u))));
}

TEST(QuantBf16, AllBf16ValuesRoundTrip) {
    for (uint32_t i = 0; i < 65536; ++i) {
        const auto b = static_cast<uint16_t>(i);
        const float f = bf16_to_fp32(b);
        ASSERT_EQ(std::bit_cast<uint32_t>(f), i << 16);
        if (std::isnan(f)) {
            ASSERT_EQ(fp32_to_bf16(f), b | 0x40u) << std::hex << i;  // quietened
        } else {
            ASSERT_EQ(fp32_to_bf16(f), b) << std::hex << i;
        }
    }
}

TEST(QuantBf16, RoundsToNearestEven) {
    std::mt19937 rng(99);
    for (int i = 0; i < 2'000'000; ++i) {
        const uint32_t u = rng();
        const float f = std::bit_cast<float>(u);
        if (std::isnan(f)) continue;
        const uint16_t b = fp32_to_bf16(f);
        const uint16_t down = static_cast<uint16_t>(u >> 16);  // truncation toward zero
        const uint32_t rest = u & 0xffffu;
        uint16_t want = down;
        if (rest > 0x8000u || (rest == 0x8000u && (down & 1u))) want = static_cast<uint16_t>(down + 1);
        ASSERT_EQ(b, want) << std::hex << u;
    }
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // max float -> inf
}

}  // namespace
}  // namespace strata
