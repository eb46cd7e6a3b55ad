// Packed on-disk block layouts of the GGUF quantized types Strata reads or writes (facts §2.1),
// each pinned by a static_assert on its size. f16 fields are raw IEEE binary16 bits (quant/half.h).
#pragma once

#include <bit>
#include <cstdint>

namespace strata {

static_assert(std::endian::native == std::endian::little, "GGUF blocks are little-endian");

inline constexpr int kQk32 = 32;    // elements per block of the _0/_1, IQ4_NL and MXFP4 formats
inline constexpr int kQkK = 256;    // elements per K-quant super-block
inline constexpr int kKScaleSize = 12;  // packed 6-bit scales + mins of Q4_K / Q5_K

// ---- 32-element formats. qs[j] holds element j in its low nibble and j+16 in its high nibble.
struct BlockQ4_0 {
    uint16_t d;          // f16 scale; y = (nib - 8) * d
    uint8_t qs[kQk32 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block is 18 bytes");

struct BlockQ4_1 {
    uint16_t d;          // f16 scale
    uint16_t m;          // f16 minimum; y = nib * d + m
    uint8_t qs[kQk32 / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block is 20 bytes");

struct BlockQ5_0 {
    uint16_t d;          // f16 scale; y = (q - 16) * d
    uint8_t qh[4];       // bit j of this little-endian u32 is the 5th bit of element j
    uint8_t qs[kQk32 / 2];
};
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block is 22 bytes");

struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;          // y = q * d + m
    uint8_t qh[4];
    uint8_t qs[kQk32 / 2];
};
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block is 24 bytes");

struct BlockQ8_0 {
    uint16_t d;          // y = qs[j] * d
    int8_t qs[kQk32];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block is 34 bytes");

// Activation format only (never in files). 36 bytes as in ggml; gguf-py's GGML_QUANT_SIZES says
// 40, which is wrong.
struct BlockQ8_1 {
    uint16_t d;          // y = qs[j] * d
    uint16_t s;          // f16 of d * sum(qs), used by Q4_1/Q5_1 dot products
    int8_t qs[kQk32];
};
static_assert(sizeof(BlockQ8_1) == 36, "Q8_1 block is 36 bytes");

struct BlockIq4Nl {
    uint16_t d;          // y = d * kIq4nlValues[nib]
    uint8_t qs[kQk32 / 2];
};
static_assert(sizeof(BlockIq4Nl) == 18, "IQ4_NL block is 18 bytes");

struct BlockMxfp4 {
    uint8_t e;           // E8M0 exponent; scale = 2^(e - 128) (the value table is doubled)
    uint8_t qs[kQk32 / 2];
};
static_assert(sizeof(BlockMxfp4) == 17, "MXFP4 block is 17 bytes");

// ---- 256-element K-quants. Note the field order: Q2_K/Q3_K/Q6_K keep d last, Q4_K/Q5_K first.
struct BlockQ2_K {
    uint8_t scales[kQkK / 16];  // per 16: low nibble scale, high nibble min
    uint8_t qs[kQkK / 4];       // 2-bit quants
    uint16_t d;                 // f16 super-scale of the scales
    uint16_t dmin;              // f16 super-scale of the mins
};
static_assert(sizeof(BlockQ2_K) == 84, "Q2_K block is 84 bytes");

struct BlockQ3_K {
    uint8_t hmask[kQkK / 8];    // high bit of each quant (set means no -4 offset)
    uint8_t qs[kQkK / 4];       // low 2 bits
    uint8_t scales[12];         // 16 signed 6-bit scales (+32 bias), packed
    uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110, "Q3_K block is 110 bytes");

struct BlockQ4_K {
    uint16_t d;                 // f16 super-scale of the 6-bit scales
    uint16_t dmin;              // f16 super-scale of the 6-bit mins
    uint8_t scales[kKScaleSize];
    uint8_t qs[kQkK / 2];
};
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block is 144 bytes");

struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleSize];
    uint8_t qh[kQkK / 8];       // bit s of qh[l] is the 5th bit of element 32*s + l
    uint8_t qs[kQkK / 2];
};
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block is 176 bytes");

struct BlockQ6_K {
    uint8_t ql[kQkK / 2];       // low 4 bits
    uint8_t qh[kQkK / 4];       // high 2 bits
    int8_t scales[kQkK / 16];   // 8-bit signed sub-block scales
    uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block is 210 bytes");

// Activation format only. d is a float32, not a half.
struct BlockQ8_K {
    float d;
    int8_t qs[kQkK];
    int16_t bsums[kQkK / 16];   // sum of each 16 quants
};
static_assert(sizeof(BlockQ8_K) == 292, "Q8_K block is 292 bytes");

struct BlockIq4Xs {
    uint16_t d;
    uint16_t scales_h;          // 2 high bits of each of the 8 sub-block scales
    uint8_t scales_l[kQkK / 64];  // 4 low bits of each sub-block scale, two per byte
    uint8_t qs[kQkK / 2];
};
static_assert(sizeof(BlockIq4Xs) == 136, "IQ4_XS block is 136 bytes");

// Non-linear 4-bit value table of IQ4_NL and IQ4_XS.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Doubled E2M1 values of MXFP4.
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 6-bit scale and min of sub-block s (0..7) from the 12 packed bytes of Q4_K/Q5_K:
// bytes 0-3 low 6 bits = sc0..3, bytes 4-7 low 6 bits = m0..3, bytes 8-11 = low nibbles of
// sc4..7 | low nibbles of m4..7 << 4, and the top 2 bits of bytes 0-3 / 4-7 = high bits of
// sc4..7 / m4..7.
struct ScaleMin {
    uint8_t sc;
    uint8_t m;
};
constexpr ScaleMin unpack_scale_min_k4(const uint8_t* s, int j) {
    if (j < 4) return {static_cast<uint8_t>(s[j] & 63), static_cast<uint8_t>(s[j + 4] & 63)};
    return {static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4)),
            static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4))};
}

// Inverse of unpack_scale_min_k4; sc and m are 6-bit (0..63).
constexpr void pack_scale_min_k4(uint8_t* s, const uint8_t sc[8], const uint8_t m[8]) {
    for (int j = 0; j < 4; ++j) {
        s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
    }
}

}  // namespace strata
