// Gathering of i-quant and ternary blocks (iq_decode.h), the scalar finish and integer sum. The
// layouts are quant/blocks.h's; the scale identities are d·(0.5 + ls)·0.25 = (d/8)·(2ls + 1)
// (IQ2), d·(0.5 + ls)·0.5 = (d/4)·(2ls + 1) (IQ3_XXS) and dl·(g ± 1/8) = (d/8)·(2s + 1)·(8g ± 1)
// (IQ1).
#include "kernels_cpu/iq_decode.h"

#include <array>
#include <cstring>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/iq_grids.h"

namespace strata::cpu {
namespace {

using Mode = IqGathered::Mode;
constexpr uint64_t kOnes = 0x0101010101010101ull;

constexpr uint64_t byte_mask(uint32_t s) {
    uint64_t m = 0;
    for (int j = 0; j < 8; ++j)
        if ((s >> j) & 1) m |= 0xFFull << (8 * j);
    return m;
}

// Byte masks of the 8 sign bits, and of the 7-bit sign index of IQ2_XXS / IQ2_XS / IQ3_XXS
// (the 8th sign makes the count of minus signs even).
template <int N, bool Parity>
constexpr std::array<uint64_t, N> make_sign_masks() {
    std::array<uint64_t, N> m{};
    for (int s = 0; s < N; ++s) m[static_cast<size_t>(s)] = byte_mask(Parity ? iq_sign_byte(s) : s);
    return m;
}
constexpr std::array<uint64_t, 256> kMask8 = make_sign_masks<256, false>();

}  // namespace

const std::array<uint64_t, 128> kIqSignMasks7 = make_sign_masks<128, true>();

namespace {

// IQ1's grid as 8·g + 1 per byte (the +1/8 delta; the -1/8 one is 2 less).
const std::array<uint64_t, 2048>& iq1_times8_plus1() {
    static const std::array<uint64_t, 2048> table = [] {
        std::array<uint64_t, 2048> t{};
        for (size_t p = 0; p < t.size(); ++p) {
            for (int j = 0; j < 8; ++j) {
                const auto byte = static_cast<uint8_t>(8 * grid_i8(kIq1sGrid[p], j) + 1);
                t[p] |= static_cast<uint64_t>(byte) << (8 * j);
            }
        }
        return t;
    }();
    return table;
}

template <class Block>
const Block& as(const void* p, Block& tmp) {
    std::memcpy(&tmp, p, sizeof(Block));  // blocks may sit at any address in a row
    return tmp;
}

void same_scale_pairs(IqGathered& out, int ib, int sc) {
    out.sc[2 * ib] = out.sc[2 * ib + 1] = static_cast<int16_t>(sc);
}

void gather_iq2_xxs(const void* p, IqGathered& out) {
    BlockIq2Xxs tmp;
    const BlockIq2Xxs& b = as(p, tmp);
    for (int ib = 0; ib < 8; ++ib) {
        const uint32_t idx = b.qs[4 * ib] | static_cast<uint32_t>(b.qs[4 * ib + 1]) << 16;
        const uint32_t aux = b.qs[4 * ib + 2] | static_cast<uint32_t>(b.qs[4 * ib + 3]) << 16;
        for (int k = 0; k < 4; ++k) {
            out.grid[4 * ib + k] = kIq2xxsGrid[(idx >> (8 * k)) & 0xFF];
            out.mask[4 * ib + k] = kIqSignMasks7[(aux >> (7 * k)) & 0x7F];
        }
        same_scale_pairs(out, ib, static_cast<int>(2 * (aux >> 28) + 1));
    }
    out.dw = fp16_to_fp32(b.d) * 0.125f;
    out.mode = Mode::Signed;
}

// The 4-bit scales of IQ2_XS / IQ2_S, one per 16 elements.
void iq2_scales16(const uint8_t* scales, IqGathered& out) {
    for (int i = 0; i < 16; ++i) out.sc[i] = static_cast<int16_t>(2 * ((scales[i / 2] >> (4 * (i % 2))) & 0xF) + 1);
}

void gather_iq2_xs(const void* p, IqGathered& out) {
    BlockIq2Xs tmp;
    const BlockIq2Xs& b = as(p, tmp);
    for (int l = 0; l < 32; ++l) {
        out.grid[l] = kIq2xsGrid[b.qs[l] & 511];
        out.mask[l] = kIqSignMasks7[b.qs[l] >> 9];
    }
    iq2_scales16(b.scales, out);
    out.dw = fp16_to_fp32(b.d) * 0.125f;
    out.mode = Mode::Signed;
}

void gather_iq2_s(const void* p, IqGathered& out) {
    BlockIq2S tmp;
    const BlockIq2S& b = as(p, tmp);
    for (int l = 0; l < 32; ++l) {
        out.grid[l] = kIq2sGrid[b.qs[l] | (((b.qh[l / 4] >> (2 * (l % 4))) & 3) << 8)];
        out.mask[l] = kMask8[b.qs[32 + l]];
    }
    iq2_scales16(b.scales, out);
    out.dw = fp16_to_fp32(b.d) * 0.125f;
    out.mode = Mode::Signed;
}

void gather_iq3_xxs(const void* p, IqGathered& out) {
    BlockIq3Xxs tmp;
    const BlockIq3Xxs& b = as(p, tmp);
    for (int ib = 0; ib < 8; ++ib) {
        uint32_t aux;
        std::memcpy(&aux, b.qs + 64 + 4 * ib, sizeof(aux));
        for (int k = 0; k < 4; ++k) {  // a group of 8 is two grid points of 4
            const int l = 8 * ib + 2 * k;
            out.grid[4 * ib + k] = kIq3xxsGrid[b.qs[l]] | static_cast<uint64_t>(kIq3xxsGrid[b.qs[l + 1]]) << 32;
            out.mask[4 * ib + k] = kIqSignMasks7[(aux >> (7 * k)) & 0x7F];
        }
        same_scale_pairs(out, ib, static_cast<int>(2 * (aux >> 28) + 1));
    }
    out.dw = fp16_to_fp32(b.d) * 0.25f;
    out.mode = Mode::Signed;
}

void gather_iq3_s(const void* p, IqGathered& out) {
    BlockIq3S tmp;
    const BlockIq3S& b = as(p, tmp);
    for (int ib = 0; ib < 8; ++ib) {
        for (int k = 0; k < 4; ++k) {
            const int l = 8 * ib + 2 * k;
            const int i0 = b.qs[l] | (((b.qh[ib] >> (2 * k)) & 1) << 8);
            const int i1 = b.qs[l + 1] | (((b.qh[ib] >> (2 * k + 1)) & 1) << 8);
            out.grid[4 * ib + k] = kIq3sGrid[i0] | static_cast<uint64_t>(kIq3sGrid[i1]) << 32;
            out.mask[4 * ib + k] = kMask8[b.signs[4 * ib + k]];
        }
        same_scale_pairs(out, ib, 1 + 2 * ((b.scales[ib / 2] >> (4 * (ib % 2))) & 0xF));
    }
    out.dw = fp16_to_fp32(b.d);
    out.mode = Mode::Signed;
}

void gather_iq1_s(const void* p, IqGathered& out) {
    BlockIq1S tmp;
    const BlockIq1S& b = as(p, tmp);
    const auto& grid = iq1_times8_plus1();
    for (int ib = 0; ib < 8; ++ib) {
        const int qh = b.qh[ib];
        for (int k = 0; k < 4; ++k) {
            out.grid[4 * ib + k] = grid[static_cast<size_t>(b.qs[4 * ib + k] | (((qh >> (3 * k)) & 7) << 8))];
            out.mask[4 * ib + k] = qh & 0x8000 ? 2 * kOnes : 0;
        }
        same_scale_pairs(out, ib, 2 * ((qh >> 12) & 7) + 1);
    }
    out.dw = fp16_to_fp32(b.d) * 0.125f;
    out.mode = Mode::Offset;
}

void gather_iq1_m(const void* p, IqGathered& out) {
    BlockIq1M tmp;
    const BlockIq1M& b = as(p, tmp);
    const auto& grid = iq1_times8_plus1();
    for (int i = 0; i < 16; ++i) {  // qh[i]: the high index bits and delta signs of points 2i, 2i+1
        const uint32_t qh = b.qh[i];
        out.grid[2 * i] = grid[b.qs[2 * i] | ((qh & 7) << 8)];
        out.grid[2 * i + 1] = grid[b.qs[2 * i + 1] | (((qh >> 4) & 7) << 8)];
        out.mask[2 * i] = qh & 0x08 ? 2 * kOnes : 0;
        out.mask[2 * i + 1] = qh & 0x80 ? 2 * kOnes : 0;
        out.sc[i] = static_cast<int16_t>(2 * ((b.scales[i / 4] >> (3 * (i % 4))) & 7) + 1);
    }
    out.dw = fp16_to_fp32(iq1_m_d_bits(b)) * 0.125f;
    out.mode = Mode::Offset;
}

// Ternary: grid bytes are the trits t, q = t - 1, one scale for the block.
void ternary_common(const uint8_t* t, uint16_t d, IqGathered& out) {
    std::memcpy(out.grid, t, 256);
    for (uint64_t& m : out.mask) m = kOnes;
    for (int16_t& s : out.sc) s = 1;
    out.dw = fp16_to_fp32(d);
    out.mode = Mode::Offset;
}

void gather_tq1_0(const void* p, IqGathered& out) {
    BlockTq1_0 tmp;
    const BlockTq1_0& b = as(p, tmp);
    static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    auto trit = [](uint8_t byte, int k) { return static_cast<uint8_t>((static_cast<uint8_t>(byte * kPow3[k]) * 3) >> 8); };
    uint8_t t[256];
    for (int k = 0; k < 5; ++k) {
        for (int i = 0; i < 32; ++i) t[32 * k + i] = trit(b.qs[i], k);
        for (int i = 0; i < 16; ++i) t[160 + 16 * k + i] = trit(b.qs[32 + i], k);
    }
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 4; ++i) t[240 + 4 * k + i] = trit(b.qh[i], k);
    ternary_common(t, b.d, out);
}

void gather_tq2_0(const void* p, IqGathered& out) {
    BlockTq2_0 tmp;
    const BlockTq2_0& b = as(p, tmp);
    uint8_t t[256];
    for (int e = 0; e < 256; ++e)
        t[e] = static_cast<uint8_t>((b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3);
    ternary_common(t, b.d, out);
}

}  // namespace

IqGatherFn find_iq_gather(GgmlType type) {
    switch (type) {
        case GgmlType::IQ2_XXS: return gather_iq2_xxs;
        case GgmlType::IQ2_XS: return gather_iq2_xs;
        case GgmlType::IQ2_S: return gather_iq2_s;
        case GgmlType::IQ3_XXS: return gather_iq3_xxs;
        case GgmlType::IQ3_S: return gather_iq3_s;
        case GgmlType::IQ1_S: return gather_iq1_s;
        case GgmlType::IQ1_M: return gather_iq1_m;
        case GgmlType::TQ1_0: return gather_tq1_0;
        case GgmlType::TQ2_0: return gather_tq2_0;
        default: return nullptr;
    }
}

void iq_finish_scalar(const IqGathered& g, IqDecoded& out) {
    for (int l = 0; l < 32; ++l) {
        for (int j = 0; j < 8; ++j) {
            const int v = grid_u8(g.grid[l], j), m = grid_u8(g.mask[l], j);
            const int q = g.mode == IqGathered::Mode::Signed ? (m != 0 ? -v : v) : static_cast<int8_t>(v - m);
            out.q[8 * l + j] = static_cast<int8_t>(q);
        }
    }
    std::memcpy(out.sc, g.sc, sizeof(out.sc));
    out.dw = g.dw;
}

int32_t iq_isum_scalar(const IqDecoded& w, const int8_t* x) {
    int32_t isum = 0;
    for (int i = 0; i < 16; ++i) {
        int32_t part = 0;
        for (int t = 0; t < 16; ++t) part += w.q[16 * i + t] * x[16 * i + t];
        isum += w.sc[i] * part;
    }
    return isum;
}

}  // namespace strata::cpu
