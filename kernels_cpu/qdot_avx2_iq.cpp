// AVX2 twins of iq_decode.h's finish and integer sum. The finish turns four gathered 8-byte
// groups at a time into bytes (_mm256_sign_epi8 with the sign masks, or a bytewise subtract);
// the sum takes maddubs(|q|, sign(x, q)) pair sums and madd's them with the two sub-block scales
// of 16. Both give exactly the bytes / integer of the scalar versions. The i-quants have gather,
// finish and sum fused (iq_fused_dot_avx2): grid entries, signs and scales go straight into
// registers; the generic pair serves the ternary types.
#include "kernels_cpu/iq_decode.h"

#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstring>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/iq_grids.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace strata::cpu {
namespace {

inline __m256i load256(const void* p) {
    return _mm256_load_si256(static_cast<const __m256i*>(p));
}

int32_t hsum_epi32(__m256i v) {
    const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
    return _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
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
    return hsum_epi32(acc);
}

// The sign bytes of IQ2_XS's 16 indices of a half block (128 elements), one per 16-bit
// lane's low byte: the 7 stored bits and, as bit 7, their parity (an even count of
// minus signs), worked out in registers: the nibbles' xor looked up in a parity table.
inline __m256i iq2_sign_bytes(__m256i q) {
    const __m256i parity = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0,
                                            0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    const __m256i bits = _mm256_srli_epi16(q, 9);  // 7 sign bits, high byte 0
    const __m256i nibbles = _mm256_xor_si256(bits, _mm256_srli_epi16(q, 13));
    return _mm256_or_si256(bits, _mm256_shuffle_epi8(parity, nibbles));
}

// ±1 per element of group j (0..3) of a half block from its sign bytes: qword j holds the
// group's four sign bytes (bytes 0, 2, 4, 6); each spreads over its 8 elements, bit e of it
// deciding element e.
template <int J>
inline __m256i iq2_group_signs(__m256i sign_bytes) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2,
                                            4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    const __m256i group = _mm256_shuffle_epi8(_mm256_permute4x64_epi64(sign_bytes, J * 0x55), spread);
    return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(group, bit), bit), _mm256_set1_epi8(1));
}

// One IQ2_XS block (74 bytes at `p`, read in place: rows keep no alignment) against n_cols
// activation rows (Cols > 0: that many, known when compiled). Per half block (four groups of
// 32 elements), the 16 indices are loaded at once; their signs are worked out in registers and
// their grid entries looked up four to a register; with x's signs flipped where the weight's
// are, maddubs(grid, x) is q·x pairwise, as isum_avx2 computes it. Integer sums: the order of
// the adds does not matter.
template <int Cols>
void iq2_xs_block(const uint8_t* p, const QDotActs& x, int64_t block, int n_cols, float* sum) {
    const int cols = Cols > 0 ? Cols : n_cols;
    const uint8_t* scales = p + offsetof(BlockIq2Xs, scales);
    __m256i acc[kQDotMaxCols];
    for (int c = 0; c < cols; ++c) acc[c] = _mm256_setzero_si256();
    // The 16 scales 2·s + 1 as words, word 2j + h group j's scale h; groups 0-3 in both lanes
    // of `quarter[0]`, 4-7 in both of `quarter[1]` (a byte shuffle stays within its lane).
    uint64_t packed;
    std::memcpy(&packed, scales, sizeof(packed));
    const __m128i nib = _mm_cvtsi64_si128(static_cast<int64_t>(packed));
    const __m256i s16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(_mm_and_si128(nib, _mm_set1_epi8(0xF)),
                                                               _mm_and_si128(_mm_srli_epi16(nib, 4), _mm_set1_epi8(0xF))));
    const __m256i odd = _mm256_add_epi16(_mm256_add_epi16(s16, s16), _mm256_set1_epi16(1));
    const __m256i quarter[2] = {_mm256_permute2x128_si256(odd, odd, 0x00), _mm256_permute2x128_si256(odd, odd, 0x11)};
    const auto group = [&](int j, __m256i grid, __m256i sign) {
        // Group j's two scales, each over its 16 elements' 8 word lanes.
        const int w = 4 * (j & 3);
        const __m256i pick = _mm256_setr_epi8(w, w + 1, w, w + 1, w, w + 1, w, w + 1, w, w + 1, w, w + 1, w, w + 1, w, w + 1,
                                              w + 2, w + 3, w + 2, w + 3, w + 2, w + 3, w + 2, w + 3,
                                              w + 2, w + 3, w + 2, w + 3, w + 2, w + 3, w + 2, w + 3);
        const __m256i sc = _mm256_shuffle_epi8(quarter[j >> 2], pick);
        for (int c = 0; c < cols; ++c) {
            const auto* xq = reinterpret_cast<const BlockQ8_K*>(x.row(c))[block].qs + 32 * j;
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
            acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(grid, _mm256_sign_epi8(xv, sign)), sc));
        }
    };
    for (int half = 0; half < 2; ++half) {
        const uint8_t* qs = p + offsetof(BlockIq2Xs, qs) + 32 * half;
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
        alignas(32) uint16_t index[16];
        _mm256_store_si256(reinterpret_cast<__m256i*>(index), _mm256_and_si256(q, _mm256_set1_epi16(511)));
        const __m256i signs = iq2_sign_bytes(q);
        const auto grid = [&](int g) {
            const uint16_t* i = index + 4 * g;
            return _mm256_set_epi64x(static_cast<int64_t>(kIq2xsGrid[i[3]]), static_cast<int64_t>(kIq2xsGrid[i[2]]),
                                     static_cast<int64_t>(kIq2xsGrid[i[1]]), static_cast<int64_t>(kIq2xsGrid[i[0]]));
        };
        group(4 * half, grid(0), iq2_group_signs<0>(signs));
        group(4 * half + 1, grid(1), iq2_group_signs<1>(signs));
        group(4 * half + 2, grid(2), iq2_group_signs<2>(signs));
        group(4 * half + 3, grid(3), iq2_group_signs<3>(signs));
    }
    uint16_t d;
    std::memcpy(&d, p + offsetof(BlockIq2Xs, d), sizeof(d));
    const float dw = fp16_to_fp32(d) * 0.125f;
    for (int c = 0; c < cols; ++c) {
        const float xd = reinterpret_cast<const BlockQ8_K*>(x.row(c))[block].d;
        sum[c] += xd * (dw * static_cast<float>(hsum_epi32(acc[c])));
    }
}

// The other i-quants go a 32-element group at a time: the group's magnitudes as unsigned
// bytes, the signs to give x (±1 per element, or the signed q itself, whose sign is q's), and
// its scale words (lanes 0-7 the pairs of elements 0-15, 8-15 those of elements 16-31), so that
// madd(maddubs(mag, sign(x, sign)), sc) is isum_avx2's sum of the group.
struct Group {
    __m256i mag, sign, sc;
};

inline __m256i scale_pair(int lo, int hi) {
    return _mm256_setr_m128i(_mm_set1_epi16(static_cast<int16_t>(lo)), _mm_set1_epi16(static_cast<int16_t>(hi)));
}

inline __m256i points64(const uint64_t* grid, int i0, int i1, int i2, int i3) {
    return _mm256_set_epi64x(static_cast<int64_t>(grid[i3]), static_cast<int64_t>(grid[i2]),
                             static_cast<int64_t>(grid[i1]), static_cast<int64_t>(grid[i0]));
}

// ±1 per element of a group from its four sign bytes: bit e of byte k negates element 8k + e.
inline __m256i signs_from_bytes(const uint8_t* s) {
    uint32_t four;
    std::memcpy(&four, s, sizeof(four));
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(four)), spread);
    return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(1));
}

inline float f16_at(const uint8_t* p) {
    uint16_t d;
    std::memcpy(&d, p, sizeof(d));
    return fp16_to_fp32(d);
}

// IQ2_XXS and IQ3_XXS: each group has one word of four 7-bit sign indices (their masks looked
// up four to a register) and a 4-bit scale for both its halves.
inline Group packed_signs(__m256i grid, uint32_t aux) {
    const uint64_t* masks = kIqSignMasks7.data();
    const __m256i sign = _mm256_or_si256(points64(masks, aux & 127, (aux >> 7) & 127, (aux >> 14) & 127, (aux >> 21) & 127),
                                         _mm256_set1_epi8(1));
    return {grid, sign, _mm256_set1_epi16(static_cast<int16_t>(2 * (aux >> 28) + 1))};
}

struct Iq2XxsLayout {
    static constexpr size_t kBlockBytes = sizeof(BlockIq2Xxs);
    static float dw(const uint8_t* p) { return f16_at(p) * 0.125f; }
    static Group group(const uint8_t* p, int j) {  // four 8-byte points, one byte index each
        const uint8_t* i = p + offsetof(BlockIq2Xxs, qs) + 8 * j;
        uint32_t aux;
        std::memcpy(&aux, i + 4, sizeof(aux));
        return packed_signs(points64(kIq2xxsGrid, i[0], i[1], i[2], i[3]), aux);
    }
};

struct Iq3XxsLayout {
    static constexpr size_t kBlockBytes = sizeof(BlockIq3Xxs);
    static float dw(const uint8_t* p) { return f16_at(p) * 0.25f; }
    static Group group(const uint8_t* p, int j) {  // eight 4-byte points, one byte index each
        const uint8_t* i = p + offsetof(BlockIq3Xxs, qs) + 8 * j;
        uint32_t aux;
        std::memcpy(&aux, p + offsetof(BlockIq3Xxs, qs) + 64 + 4 * j, sizeof(aux));
        const __m256i grid = _mm256_setr_epi32(static_cast<int>(kIq3xxsGrid[i[0]]), static_cast<int>(kIq3xxsGrid[i[1]]),
                                               static_cast<int>(kIq3xxsGrid[i[2]]), static_cast<int>(kIq3xxsGrid[i[3]]),
                                               static_cast<int>(kIq3xxsGrid[i[4]]), static_cast<int>(kIq3xxsGrid[i[5]]),
                                               static_cast<int>(kIq3xxsGrid[i[6]]), static_cast<int>(kIq3xxsGrid[i[7]]));
        return packed_signs(grid, aux);
    }
};

// IQ2_S: four 10-bit indices (a low byte each, two high bits from qh[j]), a sign byte per
// point, 4-bit scales per 16 elements.
struct Iq2SLayout {
    static constexpr size_t kBlockBytes = sizeof(BlockIq2S);
    static float dw(const uint8_t* p) { return f16_at(p) * 0.125f; }
    static Group group(const uint8_t* p, int j) {
        const uint8_t* lo = p + offsetof(BlockIq2S, qs) + 4 * j;
        const int hi = p[offsetof(BlockIq2S, qh) + j], sc = p[offsetof(BlockIq2S, scales) + j];
        const __m256i grid = points64(kIq2sGrid, lo[0] | (hi & 3) << 8, lo[1] | (hi & 12) << 6, lo[2] | (hi & 48) << 4,
                                      lo[3] | (hi & 192) << 2);
        return {grid, signs_from_bytes(lo + 32), scale_pair(2 * (sc & 15) + 1, 2 * (sc >> 4) + 1)};
    }
};

// IQ3_S: eight 9-bit indices (a low byte each, bit k of qh[j] for point k), a sign byte per 8
// elements, one 4-bit scale per group. The indices are put together in one register and
// gathered (eight scalar lookups, each with its own high bit, were slower on the dev box: 4.7-7.2
// against 6.3-8.9 GMAC/s one row; IQ3_XXS's plain byte indices are faster looked up one by one).
struct Iq3SLayout {
    static constexpr size_t kBlockBytes = sizeof(BlockIq3S);
    static float dw(const uint8_t* p) { return f16_at(p); }
    static Group group(const uint8_t* p, int j) {
        const uint8_t* lo = p + offsetof(BlockIq3S, qs) + 8 * j;
        const int hi = p[offsetof(BlockIq3S, qh) + j];
        uint64_t low;
        std::memcpy(&low, lo, sizeof(low));
        const __m256i high = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(hi), _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1)),
                                              _mm256_set1_epi32(256));
        const __m256i index = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(low))), high);
        const __m256i grid = _mm256_i32gather_epi32(reinterpret_cast<const int*>(kIq3sGrid), index, 4);
        const int sc = 2 * ((p[offsetof(BlockIq3S, scales) + j / 2] >> (4 * (j % 2))) & 15) + 1;
        return {grid, signs_from_bytes(p + offsetof(BlockIq3S, signs) + 4 * j), _mm256_set1_epi16(static_cast<int16_t>(sc))};
    }
};

// IQ1: q = 8g + 1 for a point whose delta is +1/8, 8g - 1 for -1/8 (g in -1, 0, 1 bytewise),
// signed; |q| against x with q's signs.
inline Group iq1_points(__m256i grid, __m256i plus_delta, __m256i sc) {
    const __m256i q = _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), grid), plus_delta);
    return {_mm256_abs_epi8(q), q, sc};
}

// IQ1_S: qh[j] holds the four indices' high 3 bits, the group's 3-bit scale and one delta sign.
struct Iq1SLayout {
    static constexpr size_t kBlockBytes = sizeof(BlockIq1S);
    static float dw(const uint8_t* p) { return f16_at(p) * 0.125f; }
    static Group group(const uint8_t* p, int j) {
        const uint8_t* lo = p + offsetof(BlockIq1S, qs) + 4 * j;
        uint16_t qh;
        std::memcpy(&qh, p + offsetof(BlockIq1S, qh) + 2 * j, sizeof(qh));
        const __m256i grid = points64(kIq1sGrid, lo[0] | (qh & 7) << 8, lo[1] | (qh & 0x38) << 5, lo[2] | (qh & 0x1C0) << 2,
                                      lo[3] | (qh & 0xE00) >> 1);
        return iq1_points(grid, _mm256_set1_epi8(qh & 0x8000 ? -1 : 1),
                          _mm256_set1_epi16(static_cast<int16_t>(2 * ((qh >> 12) & 7) + 1)));
    }
};

// IQ1_M: a qh byte per two points (per nibble: 3 high index bits, the point's delta sign),
// 3-bit scales per 16 elements in the four scale words, whose top nibbles are d.
struct Iq1MLayout {
    static constexpr size_t kBlockBytes = sizeof(BlockIq1M);
    static float dw(const uint8_t* p) {
        BlockIq1M b;  // only the scale words hold d
        std::memcpy(b.scales, p + offsetof(BlockIq1M, scales), sizeof(b.scales));
        return fp16_to_fp32(iq1_m_d_bits(b)) * 0.125f;
    }
    static Group group(const uint8_t* p, int j) {
        const uint8_t* lo = p + offsetof(BlockIq1M, qs) + 4 * j;
        const int h0 = p[offsetof(BlockIq1M, qh) + 2 * j], h1 = p[offsetof(BlockIq1M, qh) + 2 * j + 1];
        const __m256i grid = points64(kIq1sGrid, lo[0] | (h0 & 7) << 8, lo[1] | (h0 & 0x70) << 4, lo[2] | (h1 & 7) << 8,
                                      lo[3] | (h1 & 0x70) << 4);
        const auto delta = [](int nibble) {  // eight bytes of -1 or +1
            return static_cast<int64_t>(nibble & 8 ? ~0ull : 0x0101010101010101ull);
        };
        const __m256i plus_delta = _mm256_set_epi64x(delta(h1 >> 4), delta(h1), delta(h0 >> 4), delta(h0));
        uint16_t word;
        std::memcpy(&word, p + offsetof(BlockIq1M, scales) + 2 * (j / 2), sizeof(word));
        const int shift = 6 * (j % 2);
        return iq1_points(grid, plus_delta, scale_pair(2 * ((word >> shift) & 7) + 1, 2 * ((word >> (shift + 3)) & 7) + 1));
    }
};

// One block of such a layout against n_cols rows (Cols > 0: known when compiled), a group at a
// time. Integer sums: the order of the adds does not matter.
template <class Layout, int Cols>
void group_block(const uint8_t* p, const QDotActs& x, int64_t block, int n_cols, float* sum) {
    const int cols = Cols > 0 ? Cols : n_cols;
    __m256i acc[kQDotMaxCols];
    for (int c = 0; c < cols; ++c) acc[c] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
        const Group g = Layout::group(p, j);
        for (int c = 0; c < cols; ++c) {
            const auto* xq = reinterpret_cast<const BlockQ8_K*>(x.row(c))[block].qs + 32 * j;
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
            acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(g.mag, _mm256_sign_epi8(xv, g.sign)), g.sc));
        }
    }
    const float dw = Layout::dw(p);
    for (int c = 0; c < cols; ++c) {
        const float xd = reinterpret_cast<const BlockQ8_K*>(x.row(c))[block].d;
        sum[c] += xd * (dw * static_cast<float>(hsum_epi32(acc[c])));
    }
}

// A row of `Bytes`-byte blocks, each through `Block` (its one-row instance when there is one
// row: the decode GEMV), then the sums out.
using FusedBlockFn = void (*)(const uint8_t* p, const QDotActs& x, int64_t block, int n_cols, float* sum);
template <FusedBlockFn One, FusedBlockFn Any, size_t Bytes>
void fused_dot(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    float sum[kQDotMaxCols] = {};
    const auto* wb = static_cast<const uint8_t*>(w);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* p = wb + static_cast<size_t>(b) * Bytes;
        if (n_cols == 1) {
            One(p, x, b, 1, sum);
        } else {
            Any(p, x, b, n_cols, sum);
        }
    }
    for (int c = 0; c < n_cols; ++c) out[c] = sum[c];
}

template <class Layout>
constexpr QDotFn grouped() {
    return fused_dot<group_block<Layout, 1>, group_block<Layout, 0>, Layout::kBlockBytes>;
}

// The bias of a decoded block for the AVX-512 sum over x + 128: 128 · Σ sc·q, the block's sum
// against x = 1.
void set_bias(IqDecoded& d) {
    static const std::array<int8_t, 256> ones = [] {
        std::array<int8_t, 256> a{};
        a.fill(1);
        return a;
    }();
    d.bias = 128 * isum_avx2(d, ones.data());
}

// A row's blocks gathered and finished into IqDecoded, with the bias the AVX-512 sum needs
// (IQ2_XS, whose fused kernel does not go a group at a time).
template <GgmlType T>
void decode_row(const void* w, int64_t n_blocks, void* out) {
    static const IqGatherFn gather = find_iq_gather(T);
    const size_t bytes = type_traits(T).type_size;
    auto* dec = static_cast<IqDecoded*>(out);
    IqGathered g;
    for (int64_t b = 0; b < n_blocks; ++b) {
        gather(static_cast<const uint8_t*>(w) + static_cast<size_t>(b) * bytes, g);
        finish_avx2(g, dec[b]);
        set_bias(dec[b]);
    }
}

// The same from a group layout's registers: q = |q| with its signs, the scale words' first and
// ninth lanes the group's two scales.
template <class Layout>
void decode_row_grouped(const void* w, int64_t n_blocks, void* out) {
    auto* dec = static_cast<IqDecoded*>(out);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint8_t* p = static_cast<const uint8_t*>(w) + static_cast<size_t>(b) * Layout::kBlockBytes;
        IqDecoded& d = dec[b];
        for (int j = 0; j < 8; ++j) {
            const Group g = Layout::group(p, j);
            _mm256_store_si256(reinterpret_cast<__m256i*>(d.q + 32 * j), _mm256_sign_epi8(g.mag, g.sign));
            d.sc[2 * j] = static_cast<int16_t>(_mm256_extract_epi16(g.sc, 0));
            d.sc[2 * j + 1] = static_cast<int16_t>(_mm256_extract_epi16(g.sc, 8));
        }
        d.dw = Layout::dw(p);
        set_bias(d);
    }
}

// A decoded row against n_cols rows: each block's integer sum as isum_avx2 takes it, the float
// sums as the fused kernels add them (the same bits).
void dot_decoded_avx2(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    float sum[kQDotMaxCols] = {};
    const auto* dec = static_cast<const IqDecoded*>(w);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const float dw = dec[b].dw;
        for (int c = 0; c < n_cols; ++c) {
            const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x.row(c))[b];
            sum[c] += xb.d * (dw * static_cast<float>(isum_avx2(dec[b], xb.qs)));
        }
    }
    for (int c = 0; c < n_cols; ++c) out[c] = sum[c];
}

}  // namespace

QDotDecoded qdot_avx2_iq_decoded(GgmlType type) {
    const auto with = [](QDecodeRowFn decode) { return QDotDecoded{decode, dot_decoded_avx2, sizeof(IqDecoded)}; };
    switch (type) {
        case GgmlType::IQ2_XS: return with(decode_row<GgmlType::IQ2_XS>);
        case GgmlType::IQ2_XXS: return with(decode_row_grouped<Iq2XxsLayout>);
        case GgmlType::IQ2_S: return with(decode_row_grouped<Iq2SLayout>);
        case GgmlType::IQ3_XXS: return with(decode_row_grouped<Iq3XxsLayout>);
        case GgmlType::IQ3_S: return with(decode_row_grouped<Iq3SLayout>);
        case GgmlType::IQ1_S: return with(decode_row_grouped<Iq1SLayout>);
        case GgmlType::IQ1_M: return with(decode_row_grouped<Iq1MLayout>);
        default: return {};
    }
}

IqFinishFn iq_finish_avx2() {
    return finish_avx2;
}

IqIsumFn iq_isum_avx2() {
    return isum_avx2;
}

QDotFn iq_fused_dot_avx2(GgmlType type) {
    switch (type) {
        case GgmlType::IQ2_XS: return fused_dot<iq2_xs_block<1>, iq2_xs_block<0>, sizeof(BlockIq2Xs)>;
        case GgmlType::IQ2_XXS: return grouped<Iq2XxsLayout>();
        case GgmlType::IQ3_XXS: return grouped<Iq3XxsLayout>();
        case GgmlType::IQ2_S: return grouped<Iq2SLayout>();
        case GgmlType::IQ3_S: return grouped<Iq3SLayout>();
        case GgmlType::IQ1_S: return grouped<Iq1SLayout>();
        case GgmlType::IQ1_M: return grouped<Iq1MLayout>();
        default: return nullptr;
    }
}

}  // namespace strata::cpu

#pragma GCC pop_options
