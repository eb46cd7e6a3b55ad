// AVX2 twins of iq_decode.h's finish and integer sum. The finish turns four gathered 8-byte
// groups at a time into bytes (_mm256_sign_epi8 with the sign masks, or a bytewise subtract);
// the sum takes maddubs(|q|, sign(x, q)) pair sums and madd's them with the two sub-block scales
// of 16. Both give exactly the bytes / integer of the scalar versions. IQ2_XS, IQ2_XXS and
// IQ3_XXS (the 2-3 bit 70B files) have gather, finish and sum fused: grid entries and signs go
// straight into registers.
#include "kernels_cpu/iq_decode.h"

#include <immintrin.h>

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

// IQ2_XXS and IQ3_XXS: each 32-element group has one word of four 7-bit sign indices and a
// 4-bit scale (for both its halves); the layouts say where it and the group's grid indices are.
struct Iq2XxsLayout {
    static constexpr size_t kBlockBytes = sizeof(BlockIq2Xxs);
    static constexpr float kDw = 0.125f;
    static uint32_t signs_and_scale(const uint8_t* p, int j) {
        uint32_t aux;
        std::memcpy(&aux, p + offsetof(BlockIq2Xxs, qs) + 8 * j + 4, sizeof(aux));
        return aux;
    }
    static __m256i grid(const uint8_t* p, int j) {  // four 8-byte points, one byte index each
        const uint8_t* i = p + offsetof(BlockIq2Xxs, qs) + 8 * j;
        return _mm256_set_epi64x(static_cast<int64_t>(kIq2xxsGrid[i[3]]), static_cast<int64_t>(kIq2xxsGrid[i[2]]),
                                 static_cast<int64_t>(kIq2xxsGrid[i[1]]), static_cast<int64_t>(kIq2xxsGrid[i[0]]));
    }
};
struct Iq3XxsLayout {
    static constexpr size_t kBlockBytes = sizeof(BlockIq3Xxs);
    static constexpr float kDw = 0.25f;
    static uint32_t signs_and_scale(const uint8_t* p, int j) {
        uint32_t aux;
        std::memcpy(&aux, p + offsetof(BlockIq3Xxs, qs) + 64 + 4 * j, sizeof(aux));
        return aux;
    }
    static __m256i grid(const uint8_t* p, int j) {  // eight 4-byte points, one byte index each
        const uint8_t* i = p + offsetof(BlockIq3Xxs, qs) + 8 * j;
        return _mm256_setr_epi32(static_cast<int>(kIq3xxsGrid[i[0]]), static_cast<int>(kIq3xxsGrid[i[1]]),
                                 static_cast<int>(kIq3xxsGrid[i[2]]), static_cast<int>(kIq3xxsGrid[i[3]]),
                                 static_cast<int>(kIq3xxsGrid[i[4]]), static_cast<int>(kIq3xxsGrid[i[5]]),
                                 static_cast<int>(kIq3xxsGrid[i[6]]), static_cast<int>(kIq3xxsGrid[i[7]]));
    }
};

// One block of such a layout against n_cols rows (Cols > 0: known when compiled): the group's
// sign masks looked up four to a register, maddubs(grid, x with the weight's signs).
template <class Layout, int Cols>
void packed_signs_block(const uint8_t* p, const QDotActs& x, int64_t block, int n_cols, float* sum) {
    const int cols = Cols > 0 ? Cols : n_cols;
    const uint64_t* masks = iq_sign_masks7();
    __m256i acc[kQDotMaxCols];
    for (int c = 0; c < cols; ++c) acc[c] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
        const uint32_t aux = Layout::signs_and_scale(p, j);
        const __m256i grid = Layout::grid(p, j);
        const __m256i sign = _mm256_or_si256(
            _mm256_set_epi64x(static_cast<int64_t>(masks[(aux >> 21) & 127]), static_cast<int64_t>(masks[(aux >> 14) & 127]),
                              static_cast<int64_t>(masks[(aux >> 7) & 127]), static_cast<int64_t>(masks[aux & 127])),
            _mm256_set1_epi8(1));
        const __m256i sc = _mm256_set1_epi16(static_cast<int16_t>(2 * (aux >> 28) + 1));
        for (int c = 0; c < cols; ++c) {
            const auto* xq = reinterpret_cast<const BlockQ8_K*>(x.row(c))[block].qs + 32 * j;
            const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
            acc[c] = _mm256_add_epi32(acc[c], _mm256_madd_epi16(_mm256_maddubs_epi16(grid, _mm256_sign_epi8(xv, sign)), sc));
        }
    }
    uint16_t d;
    std::memcpy(&d, p, sizeof(d));
    const float dw = fp16_to_fp32(d) * Layout::kDw;
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

}  // namespace

IqFinishFn iq_finish_avx2() {
    return finish_avx2;
}

IqIsumFn iq_isum_avx2() {
    return isum_avx2;
}

QDotFn iq_fused_dot_avx2(GgmlType type) {
    switch (type) {
        case GgmlType::IQ2_XS: return fused_dot<iq2_xs_block<1>, iq2_xs_block<0>, sizeof(BlockIq2Xs)>;
        case GgmlType::IQ2_XXS:
            return fused_dot<packed_signs_block<Iq2XxsLayout, 1>, packed_signs_block<Iq2XxsLayout, 0>, Iq2XxsLayout::kBlockBytes>;
        case GgmlType::IQ3_XXS:
            return fused_dot<packed_signs_block<Iq3XxsLayout, 1>, packed_signs_block<Iq3XxsLayout, 0>, Iq3XxsLayout::kBlockBytes>;
        default: return nullptr;
    }
}

}  // namespace strata::cpu

#pragma GCC pop_options
