// Unpacking of i-quant and ternary blocks to signed bytes (iq_decode.h). The layouts are
// quant/blocks.h's; the scale identities are d·(0.5 + ls)·0.25 = (d/8)·(2ls + 1) (IQ2),
// d·(0.5 + ls)·0.5 = (d/4)·(2ls + 1) (IQ3_XXS) and dl·(g ± 1/8) = (d/8)·(2s + 1)·(8g ± 1) (IQ1).
#include "kernels_cpu/iq_decode.h"

#include <array>
#include <cstring>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/iq_grids.h"

namespace strata::cpu {
namespace {

// Byte j of entry s is 0xFF where bit j of s is set.
constexpr std::array<uint64_t, 256> make_sign_masks() {
    std::array<uint64_t, 256> m{};
    for (int s = 0; s < 256; ++s)
        for (int j = 0; j < 8; ++j)
            if ((s >> j) & 1) m[static_cast<size_t>(s)] |= 0xFFull << (8 * j);
    return m;
}
constexpr std::array<uint64_t, 256> kSignMasks = make_sign_masks();

// 8 grid magnitudes (each 1..127) negated where bit j of signs is set: per byte
// (g ^ 0xFF) + 1 = -g, with no carry between bytes because no magnitude is 0.
inline void put_signed(uint64_t grid, uint32_t signs, int8_t* q) {
    const uint64_t m = kSignMasks[signs & 0xFF];
    const uint64_t v = (grid ^ m) + (m & 0x0101010101010101ull);
    std::memcpy(q, &v, sizeof(v));
}

// IQ1: 8·g ± 1 for the 8 values of a grid entry.
inline void put_iq1(uint64_t grid, bool minus, int8_t* q) {
    for (int j = 0; j < 8; ++j) q[j] = static_cast<int8_t>(8 * grid_i8(grid, j) + (minus ? -1 : 1));
}

template <class Block>
const Block& as(const void* p, Block& tmp) {
    std::memcpy(&tmp, p, sizeof(Block));  // blocks may sit at any address in a row
    return tmp;
}

void decode_iq2_xxs(const void* p, IqDecoded& out) {
    BlockIq2Xxs tmp;
    const BlockIq2Xxs& b = as(p, tmp);
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t idx = b.qs[4 * ib] | static_cast<uint32_t>(b.qs[4 * ib + 1]) << 16;
        const uint32_t aux = b.qs[4 * ib + 2] | static_cast<uint32_t>(b.qs[4 * ib + 3]) << 16;
        out.sc[2 * ib] = out.sc[2 * ib + 1] = static_cast<int16_t>(2 * (aux >> 28) + 1);
        for (int k = 0; k < 4; ++k)
            put_signed(kIq2xxsGrid[(idx >> (8 * k)) & 0xFF], iq_sign_byte(aux >> (7 * k)), out.q + 32 * ib + 8 * k);
    }
    out.dw = fp16_to_fp32(b.d) * 0.125f;
}

// The 4-bit scales of IQ2_XS / IQ2_S, one per 16 elements.
void iq2_scales16(const uint8_t* scales, IqDecoded& out) {
    for (int i = 0; i < 16; ++i) out.sc[i] = static_cast<int16_t>(2 * ((scales[i / 2] >> (4 * (i % 2))) & 0xF) + 1);
}

void decode_iq2_xs(const void* p, IqDecoded& out) {
    BlockIq2Xs tmp;
    const BlockIq2Xs& b = as(p, tmp);
    for (int l = 0; l < 32; ++l) put_signed(kIq2xsGrid[b.qs[l] & 511], iq_sign_byte(b.qs[l] >> 9), out.q + 8 * l);
    iq2_scales16(b.scales, out);
    out.dw = fp16_to_fp32(b.d) * 0.125f;
}

void decode_iq2_s(const void* p, IqDecoded& out) {
    BlockIq2S tmp;
    const BlockIq2S& b = as(p, tmp);
    for (int l = 0; l < 32; ++l) {
        const int idx = b.qs[l] | (((b.qh[l / 4] >> (2 * (l % 4))) & 3) << 8);
        put_signed(kIq2sGrid[idx], b.qs[32 + l], out.q + 8 * l);
    }
    iq2_scales16(b.scales, out);
    out.dw = fp16_to_fp32(b.d) * 0.125f;
}

void decode_iq3_xxs(const void* p, IqDecoded& out) {
    BlockIq3Xxs tmp;
    const BlockIq3Xxs& b = as(p, tmp);
    for (int ib = 0; ib < 8; ++ib) {
        uint32_t aux;
        std::memcpy(&aux, b.qs + 64 + 4 * ib, sizeof(aux));
        out.sc[2 * ib] = out.sc[2 * ib + 1] = static_cast<int16_t>(2 * (aux >> 28) + 1);
        for (int k = 0; k < 4; ++k) {
            const uint64_t grid = kIq3xxsGrid[b.qs[8 * ib + 2 * k]] |
                                  static_cast<uint64_t>(kIq3xxsGrid[b.qs[8 * ib + 2 * k + 1]]) << 32;
            put_signed(grid, iq_sign_byte(aux >> (7 * k)), out.q + 32 * ib + 8 * k);
        }
    }
    out.dw = fp16_to_fp32(b.d) * 0.25f;
}

void decode_iq3_s(const void* p, IqDecoded& out) {
    BlockIq3S tmp;
    const BlockIq3S& b = as(p, tmp);
    for (int ib = 0; ib < 8; ++ib) {
        out.sc[2 * ib] = out.sc[2 * ib + 1] = static_cast<int16_t>(1 + 2 * ((b.scales[ib / 2] >> (4 * (ib % 2))) & 0xF));
        for (int k = 0; k < 4; ++k) {
            const int l = 8 * ib + 2 * k;
            const int i0 = b.qs[l] | (((b.qh[ib] >> (2 * k)) & 1) << 8);
            const int i1 = b.qs[l + 1] | (((b.qh[ib] >> (2 * k + 1)) & 1) << 8);
            put_signed(kIq3sGrid[i0] | static_cast<uint64_t>(kIq3sGrid[i1]) << 32, b.signs[4 * ib + k],
                       out.q + 32 * ib + 8 * k);
        }
    }
    out.dw = fp16_to_fp32(b.d);
}

void decode_iq1_s(const void* p, IqDecoded& out) {
    BlockIq1S tmp;
    const BlockIq1S& b = as(p, tmp);
    for (int ib = 0; ib < 8; ++ib) {
        const int qh = b.qh[ib];
        out.sc[2 * ib] = out.sc[2 * ib + 1] = static_cast<int16_t>(2 * ((qh >> 12) & 7) + 1);
        for (int k = 0; k < 4; ++k)
            put_iq1(kIq1sGrid[b.qs[4 * ib + k] | (((qh >> (3 * k)) & 7) << 8)], qh & 0x8000, out.q + 32 * ib + 8 * k);
    }
    out.dw = fp16_to_fp32(b.d) * 0.125f;
}

void decode_iq1_m(const void* p, IqDecoded& out) {
    BlockIq1M tmp;
    const BlockIq1M& b = as(p, tmp);
    for (int l = 0; l < 32; ++l) {
        const int nib = (b.qh[l / 2] >> (4 * (l % 2))) & 0xF;
        put_iq1(kIq1sGrid[b.qs[l] | ((nib & 7) << 8)], nib & 8, out.q + 8 * l);
    }
    for (int s = 0; s < 16; ++s) out.sc[s] = static_cast<int16_t>(2 * ((b.scales[s / 4] >> (3 * (s % 4))) & 7) + 1);
    out.dw = fp16_to_fp32(iq1_m_d_bits(b)) * 0.125f;
}

// Ternary: q = t - 1, one scale for the block.
void ternary_common(uint16_t d, IqDecoded& out) {
    for (int16_t& s : out.sc) s = 1;
    out.dw = fp16_to_fp32(d);
}

void decode_tq1_0(const void* p, IqDecoded& out) {
    BlockTq1_0 tmp;
    const BlockTq1_0& b = as(p, tmp);
    static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    auto trit = [](uint8_t byte, int k) { return ((static_cast<uint8_t>(byte * kPow3[k]) * 3) >> 8) - 1; };
    for (int k = 0; k < 5; ++k) {
        for (int t = 0; t < 32; ++t) out.q[32 * k + t] = static_cast<int8_t>(trit(b.qs[t], k));
        for (int t = 0; t < 16; ++t) out.q[160 + 16 * k + t] = static_cast<int8_t>(trit(b.qs[32 + t], k));
    }
    for (int k = 0; k < 4; ++k)
        for (int t = 0; t < 4; ++t) out.q[240 + 4 * k + t] = static_cast<int8_t>(trit(b.qh[t], k));
    ternary_common(b.d, out);
}

void decode_tq2_0(const void* p, IqDecoded& out) {
    BlockTq2_0 tmp;
    const BlockTq2_0& b = as(p, tmp);
    for (int e = 0; e < 256; ++e)
        out.q[e] = static_cast<int8_t>(((b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) - 1);
    ternary_common(b.d, out);
}

}  // namespace

int32_t iq_isum_scalar(const IqDecoded& w, const int8_t* x) {
    int32_t isum = 0;
    for (int i = 0; i < 16; ++i) {
        int32_t part = 0;
        for (int t = 0; t < 16; ++t) part += w.q[16 * i + t] * x[16 * i + t];
        isum += w.sc[i] * part;
    }
    return isum;
}

IqDecodeFn find_iq_decode(GgmlType type) {
    switch (type) {
        case GgmlType::IQ2_XXS: return decode_iq2_xxs;
        case GgmlType::IQ2_XS: return decode_iq2_xs;
        case GgmlType::IQ2_S: return decode_iq2_s;
        case GgmlType::IQ3_XXS: return decode_iq3_xxs;
        case GgmlType::IQ3_S: return decode_iq3_s;
        case GgmlType::IQ1_S: return decode_iq1_s;
        case GgmlType::IQ1_M: return decode_iq1_m;
        case GgmlType::TQ1_0: return decode_tq1_0;
        case GgmlType::TQ2_0: return decode_tq2_0;
        default: return nullptr;
    }
}

}  // namespace strata::cpu
