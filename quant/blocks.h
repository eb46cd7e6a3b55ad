// Packed on-disk block layouts of the GGUF quantized types Strata reads or writes (docs/FORMATS.md
// §2.1), each pinned by a static_assert on its size. f16 fields are raw IEEE binary16 bits
// (quant/half.h).
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

// ---- 256-element i-quants: groups of 8 (IQ3: 4) elements are one point of a lattice grid
// (quant/iq_grids.h) times a sign pattern and a sub-block scale. Facts: gguf-py's quants.py.
// IQ2_XXS: per 32 elements (sub-block ib) 8 bytes at qs[4*ib]: bytes 0-3 are 4 grid indices,
// bytes 4-7 a little-endian u32 of 4 7-bit sign indices (bits 7k..7k+6) and the 4-bit scale ls
// (bits 28-31): y = d*(0.5 + ls)*0.25 * grid * sign.
struct BlockIq2Xxs {
    uint16_t d;
    uint16_t qs[kQkK / 8];
};
static_assert(sizeof(BlockIq2Xxs) == 66, "IQ2_XXS block is 66 bytes");

// IQ2_XS: qs[l] (group l of 8) = 9-bit grid index | 7-bit sign index << 9; scales[ib] holds the
// 4-bit scales of elements 32ib..+15 (low nibble) and 32ib+16..+31 (high nibble).
struct BlockIq2Xs {
    uint16_t d;
    uint16_t qs[kQkK / 8];
    uint8_t scales[kQkK / 32];
};
static_assert(sizeof(BlockIq2Xs) == 74, "IQ2_XS block is 74 bytes");

// IQ2_S: group l's 10-bit grid index is qs[l] | bits 2(l%4).. of qh[l/4] << 8; its 8 sign bits
// are qs[32 + l] (explicit, no parity rule); scales as IQ2_XS.
struct BlockIq2S {
    uint16_t d;
    uint8_t qs[kQkK / 4];
    uint8_t qh[kQkK / 32];
    uint8_t scales[kQkK / 32];
};
static_assert(sizeof(BlockIq2S) == 82, "IQ2_S block is 82 bytes");

// IQ3_XXS: qs[0..63] are grid indices of groups of 4; qs[64 + 4ib ..] is a little-endian u32 per
// sub-block of 32: 4 7-bit sign indices and the 4-bit scale: y = d*(0.5 + ls)*0.5 * grid * sign.
struct BlockIq3Xxs {
    uint16_t d;
    uint8_t qs[3 * kQkK / 8];
};
static_assert(sizeof(BlockIq3Xxs) == 98, "IQ3_XXS block is 98 bytes");

// IQ3_S: group l (of 4) has grid index qs[l] | bit l%8 of qh[l/8] << 8; element e's sign is bit
// e%8 of signs[e/8]; scales[ib/2] nibble ib%2 gives y = d*(1 + 2*sc) * grid * sign.
struct BlockIq3S {
    uint16_t d;
    uint8_t qs[kQkK / 4];
    uint8_t qh[kQkK / 32];
    uint8_t signs[kQkK / 8];
    uint8_t scales[kQkK / 64];
};
static_assert(sizeof(BlockIq3S) == 110, "IQ3_S block is 110 bytes");

// IQ1_S: per sub-block ib of 32, qh[ib] holds four 3-bit high parts of the 11-bit grid indices
// (bits 3k..3k+2 for group 4ib+k, low byte qs[4ib+k]), the 3-bit scale s (bits 12-14) and the
// delta sign (bit 15): y = d*(2s + 1) * (grid ± 1/8).
struct BlockIq1S {
    uint16_t d;
    uint8_t qs[kQkK / 8];
    uint16_t qh[kQkK / 32];
};
static_assert(sizeof(BlockIq1S) == 50, "IQ1_S block is 50 bytes");

// IQ1_M: group l's index is qs[l] | (nibble l%2 of qh[l/2] & 7) << 8, bit 3 of that nibble its
// delta sign; scales[] as 4 u16: 3-bit scales of 16 elements each at bits 3j..3j+2, and the
// top nibbles of the 4 words form the f16 d (word 0 bits 12-15 = d bits 0-3, ...).
struct BlockIq1M {
    uint8_t qs[kQkK / 8];
    uint8_t qh[kQkK / 16];
    uint16_t scales[kQkK / 64];
};
static_assert(sizeof(BlockIq1M) == 56, "IQ1_M block is 56 bytes");

// The f16 bits of IQ1_M's d, gathered from the top nibbles of its scale words.
constexpr uint16_t iq1_m_d_bits(const BlockIq1M& b) {
    return static_cast<uint16_t>((b.scales[0] >> 12) | ((b.scales[1] >> 8) & 0x00F0) |
                                 ((b.scales[2] >> 4) & 0x0F00) | (b.scales[3] & 0xF000));
}

// ---- ternary formats, y = d * (t - 1) with t in {0, 1, 2}.
// TQ1_0: five trits per byte in base 3, scaled to a byte: t_k = ((u8)(b * 3^k) * 3) >> 8.
// Elements 0-159: qs[t] gives elements 32k + t; 160-239: qs[32 + t] gives 160 + 16k + t;
// 240-255: qh[t] gives 240 + 4k + t (k < 4).
struct BlockTq1_0 {
    uint8_t qs[48];
    uint8_t qh[4];
    uint16_t d;
};
static_assert(sizeof(BlockTq1_0) == 54, "TQ1_0 block is 54 bytes");

// TQ2_0: element 128h + 32k + l is bits 2k..2k+1 of qs[32h + l].
struct BlockTq2_0 {
    uint8_t qs[kQkK / 4];
    uint16_t d;
};
static_assert(sizeof(BlockTq2_0) == 66, "TQ2_0 block is 66 bytes");

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
