// Reference dequantization of the lattice i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S
// and IQ1_M (layouts in blocks.h, grids in iq_grids.h). Bit-identical to gguf-py 0.19: the
// sub-block scale is rounded to float32 (d*(0.5+ls)*0.25 as two roundings) before it meets the
// grid value, and a sign only negates that product.
#include <cstring>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/iq_grids.h"
#include "quant/reference.h"

namespace strata {
namespace {

// 8 elements db * grid[j], negated where bit j of `signs` is set.
inline void signed_group8(float db, uint64_t grid, uint32_t signs, float* y) {
    for (int j = 0; j < 8; ++j) {
        const float v = db * static_cast<float>(grid_u8(grid, j));
        y[j] = (signs >> j) & 1 ? -v : v;
    }
}

// Scale of the 16 elements of group pair l/2 of IQ2_XS / IQ2_S (4-bit, two per byte).
inline float iq2_scale16(float d, const uint8_t* scales, int l) {
    const int ls = (scales[l / 4] >> (4 * ((l / 2) % 2))) & 0xF;
    return d * (0.5f + static_cast<float>(ls)) * 0.25f;
}

inline uint32_t load_u32_le(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

}  // namespace

void dequantize_iq2_xxs(const void* src, float* dst, int64_t n) {
    require_whole_blocks("iq2_xxs", n, kQkK);
    const auto* blocks = static_cast<const BlockIq2Xxs*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const float d = fp16_to_fp32(blocks[b].d);
        for (int ib = 0; ib < 8; ++ib) {
            const uint16_t* q = blocks[b].qs + 4 * ib;
            const uint32_t idx = q[0] | static_cast<uint32_t>(q[1]) << 16;    // 4 grid indices
            const uint32_t aux = q[2] | static_cast<uint32_t>(q[3]) << 16;    // signs, scale
            const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
            for (int k = 0; k < 4; ++k) {
                signed_group8(db, kIq2xxsGrid[(idx >> (8 * k)) & 0xFF], iq_sign_byte(aux >> (7 * k)),
                              dst + 32 * ib + 8 * k);
            }
        }
    }
}

void dequantize_iq2_xs(const void* src, float* dst, int64_t n) {
    require_whole_blocks("iq2_xs", n, kQkK);
    const auto* blocks = static_cast<const BlockIq2Xs*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockIq2Xs& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        for (int l = 0; l < 32; ++l) {
            signed_group8(iq2_scale16(d, blk.scales, l), kIq2xsGrid[blk.qs[l] & 511],
                          iq_sign_byte(blk.qs[l] >> 9), dst + 8 * l);
        }
    }
}

void dequantize_iq2_s(const void* src, float* dst, int64_t n) {
    require_whole_blocks("iq2_s", n, kQkK);
    const auto* blocks = static_cast<const BlockIq2S*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockIq2S& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        for (int l = 0; l < 32; ++l) {
            const int idx = blk.qs[l] | (((blk.qh[l / 4] >> (2 * (l % 4))) & 3) << 8);
            signed_group8(iq2_scale16(d, blk.scales, l), kIq2sGrid[idx], blk.qs[32 + l], dst + 8 * l);
        }
    }
}

void dequantize_iq3_xxs(const void* src, float* dst, int64_t n) {
    require_whole_blocks("iq3_xxs", n, kQkK);
    const auto* blocks = static_cast<const BlockIq3Xxs*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockIq3Xxs& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        for (int ib = 0; ib < 8; ++ib) {
            const uint32_t aux = load_u32_le(blk.qs + 64 + 4 * ib);
            const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
            for (int k = 0; k < 4; ++k) {  // group of 8 = two grid points of 4
                const uint64_t grid = kIq3xxsGrid[blk.qs[8 * ib + 2 * k]] |
                                      static_cast<uint64_t>(kIq3xxsGrid[blk.qs[8 * ib + 2 * k + 1]]) << 32;
                signed_group8(db, grid, iq_sign_byte(aux >> (7 * k)), dst + 32 * ib + 8 * k);
            }
        }
    }
}

void dequantize_iq3_s(const void* src, float* dst, int64_t n) {
    require_whole_blocks("iq3_s", n, kQkK);
    const auto* blocks = static_cast<const BlockIq3S*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockIq3S& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        for (int ib = 0; ib < 8; ++ib) {
            const int sc = (blk.scales[ib / 2] >> (4 * (ib % 2))) & 0xF;
            const float db = d * static_cast<float>(1 + 2 * sc);
            for (int k = 0; k < 4; ++k) {  // group of 8 = grid points 8ib+2k and 8ib+2k+1
                const int l = 8 * ib + 2 * k;
                const int i0 = blk.qs[l] | (((blk.qh[ib] >> (2 * k)) & 1) << 8);
                const int i1 = blk.qs[l + 1] | (((blk.qh[ib] >> (2 * k + 1)) & 1) << 8);
                const uint64_t grid = kIq3sGrid[i0] | static_cast<uint64_t>(kIq3sGrid[i1]) << 32;
                signed_group8(db, grid, blk.signs[4 * ib + k], dst + 32 * ib + 8 * k);
            }
        }
    }
}

void dequantize_iq1_s(const void* src, float* dst, int64_t n) {
    require_whole_blocks("iq1_s", n, kQkK);
    const auto* blocks = static_cast<const BlockIq1S*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockIq1S& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        for (int ib = 0; ib < 8; ++ib) {
            const int qh = blk.qh[ib];
            const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
            for (int k = 0; k < 4; ++k) {
                const uint64_t grid = kIq1sGrid[blk.qs[4 * ib + k] | (((qh >> (3 * k)) & 7) << 8)];
                for (int j = 0; j < 8; ++j)
                    dst[32 * ib + 8 * k + j] = dl * (static_cast<float>(grid_i8(grid, j)) + delta);
            }
        }
    }
}

void dequantize_iq1_m(const void* src, float* dst, int64_t n) {
    require_whole_blocks("iq1_m", n, kQkK);
    const auto* blocks = static_cast<const BlockIq1M*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockIq1M& blk = blocks[b];
        const float d = fp16_to_fp32(iq1_m_d_bits(blk));
        for (int l = 0; l < 32; ++l) {
            const int s = l / 2;  // 3-bit scale of 16 elements
            const float dl = d * static_cast<float>(2 * ((blk.scales[s / 4] >> (3 * (s % 4))) & 7) + 1);
            const int nib = (blk.qh[l / 2] >> (4 * (l % 2))) & 0xF;
            const float delta = nib & 8 ? -kIq1Delta : kIq1Delta;
            const uint64_t grid = kIq1sGrid[blk.qs[l] | ((nib & 7) << 8)];
            for (int j = 0; j < 8; ++j)
                dst[8 * l + j] = dl * (static_cast<float>(grid_i8(grid, j)) + delta);
        }
    }
}

}  // namespace strata
