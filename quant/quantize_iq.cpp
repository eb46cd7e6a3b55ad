// Reference quantizers of the lattice i-quants (Strata's own search, iq_search.h; only the
// layouts are normative) and of the ternary TQ1_0 / TQ2_0 (bit-identical to gguf-py 0.19).
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/iq_search.h"
#include "quant/reference.h"

namespace strata {
namespace {

using iq::BlockChoice;
using iq::Format;
using iq::Lattice;
using iq::SignRule;

// Sub-block scales exactly as the dequantizers compute them.
float scale_iq2(float d, int l) { return d * (0.5f + static_cast<float>(l)) * 0.25f; }
float scale_iq3xxs(float d, int l) { return d * (0.5f + static_cast<float>(l)) * 0.5f; }
float scale_odd(float d, int l) { return d * static_cast<float>(2 * l + 1); }  // IQ3_S, IQ1_S, IQ1_M

constexpr Format kIq2xxs{8, 32, 16, scale_iq2, SignRule::Parity7, {Lattice::Iq2xxs}, 1};
constexpr Format kIq2xs{8, 16, 16, scale_iq2, SignRule::Parity7, {Lattice::Iq2xs}, 1};
constexpr Format kIq2s{8, 16, 16, scale_iq2, SignRule::Free8, {Lattice::Iq2s}, 1};
constexpr Format kIq3xxs{4, 32, 16, scale_iq3xxs, SignRule::Parity7, {Lattice::Iq3xxs}, 1};
constexpr Format kIq3s{4, 32, 16, scale_odd, SignRule::Free8, {Lattice::Iq3s}, 1};
constexpr Format kIq1s{8, 32, 8, scale_odd, SignRule::None, {Lattice::Iq1sPlus, Lattice::Iq1sMinus}, 2};
constexpr Format kIq1m{8, 16, 8, scale_odd, SignRule::None, {Lattice::Iq1mBoth}, 1};

// Runs choose_block over every block of the row and hands each choice to pack(choice, block).
template <class Block, class Pack>
void quantize_rows(std::string_view name, const Format& f, const float* src, void* dst, int64_t n, Pack pack) {
    require_whole_blocks(name, n, kQkK);
    auto* blocks = static_cast<Block*>(dst);
    for (int64_t b = 0; b < n / kQkK; ++b) {
        BlockChoice c;
        iq::choose_block(f, src + b * kQkK, c);
        blocks[b] = Block{};
        pack(c, blocks[b]);
    }
}

// The 7 stored sign bits of a group whose minus signs are even in number.
uint32_t sign7(const BlockChoice& c, int g) { return c.signs[g] & 0x7Fu; }

}  // namespace

void quantize_iq2_xxs(const float* src, void* dst, int64_t n) {
    quantize_rows<BlockIq2Xxs>("iq2_xxs", kIq2xxs, src, dst, n, [](const BlockChoice& c, BlockIq2Xxs& b) {
        b.d = c.d16;
        for (int ib = 0; ib < 8; ++ib) {
            uint32_t idx = 0, aux = static_cast<uint32_t>(c.level[ib]) << 28;
            for (int k = 0; k < 4; ++k) {
                idx |= static_cast<uint32_t>(c.point[4 * ib + k]) << (8 * k);
                aux |= sign7(c, 4 * ib + k) << (7 * k);
            }
            b.qs[4 * ib] = static_cast<uint16_t>(idx);
            b.qs[4 * ib + 1] = static_cast<uint16_t>(idx >> 16);
            b.qs[4 * ib + 2] = static_cast<uint16_t>(aux);
            b.qs[4 * ib + 3] = static_cast<uint16_t>(aux >> 16);
        }
    });
}

void quantize_iq2_xs(const float* src, void* dst, int64_t n) {
    quantize_rows<BlockIq2Xs>("iq2_xs", kIq2xs, src, dst, n, [](const BlockChoice& c, BlockIq2Xs& b) {
        b.d = c.d16;
        for (int l = 0; l < 32; ++l) b.qs[l] = static_cast<uint16_t>(c.point[l] | (sign7(c, l) << 9));
        for (int i = 0; i < 8; ++i) b.scales[i] = static_cast<uint8_t>(c.level[2 * i] | (c.level[2 * i + 1] << 4));
    });
}

void quantize_iq2_s(const float* src, void* dst, int64_t n) {
    quantize_rows<BlockIq2S>("iq2_s", kIq2s, src, dst, n, [](const BlockChoice& c, BlockIq2S& b) {
        b.d = c.d16;
        for (int l = 0; l < 32; ++l) {
            b.qs[l] = static_cast<uint8_t>(c.point[l] & 0xFF);
            b.qh[l / 4] = static_cast<uint8_t>(b.qh[l / 4] | ((c.point[l] >> 8) << (2 * (l % 4))));
            b.qs[32 + l] = c.signs[l];
        }
        for (int i = 0; i < 8; ++i) b.scales[i] = static_cast<uint8_t>(c.level[2 * i] | (c.level[2 * i + 1] << 4));
    });
}

void quantize_iq3_xxs(const float* src, void* dst, int64_t n) {
    quantize_rows<BlockIq3Xxs>("iq3_xxs", kIq3xxs, src, dst, n, [](const BlockChoice& c, BlockIq3Xxs& b) {
        b.d = c.d16;
        for (int p = 0; p < 64; ++p) b.qs[p] = static_cast<uint8_t>(c.point[p]);
        for (int ib = 0; ib < 8; ++ib) {
            uint32_t aux = static_cast<uint32_t>(c.level[ib]) << 28;
            for (int k = 0; k < 4; ++k) aux |= sign7(c, 4 * ib + k) << (7 * k);
            std::memcpy(b.qs + 64 + 4 * ib, &aux, sizeof(aux));
        }
    });
}

void quantize_iq3_s(const float* src, void* dst, int64_t n) {
    quantize_rows<BlockIq3S>("iq3_s", kIq3s, src, dst, n, [](const BlockChoice& c, BlockIq3S& b) {
        b.d = c.d16;
        for (int p = 0; p < 64; ++p) {
            b.qs[p] = static_cast<uint8_t>(c.point[p] & 0xFF);
            b.qh[p / 8] = static_cast<uint8_t>(b.qh[p / 8] | ((c.point[p] >> 8) << (p % 8)));
        }
        std::memcpy(b.signs, c.signs, sizeof(b.signs));
        for (int i = 0; i < 4; ++i) b.scales[i] = static_cast<uint8_t>(c.level[2 * i] | (c.level[2 * i + 1] << 4));
    });
}

void quantize_iq1_s(const float* src, void* dst, int64_t n) {
    quantize_rows<BlockIq1S>("iq1_s", kIq1s, src, dst, n, [](const BlockChoice& c, BlockIq1S& b) {
        b.d = c.d16;
        for (int ib = 0; ib < 8; ++ib) {
            uint32_t qh = static_cast<uint32_t>(c.level[ib]) << 12 | static_cast<uint32_t>(c.option[ib]) << 15;
            for (int k = 0; k < 4; ++k) {
                const uint16_t p = c.point[4 * ib + k];
                b.qs[4 * ib + k] = static_cast<uint8_t>(p & 0xFF);
                qh |= static_cast<uint32_t>(p >> 8) << (3 * k);
            }
            b.qh[ib] = static_cast<uint16_t>(qh);
        }
    });
}

void quantize_iq1_m(const float* src, void* dst, int64_t n) {
    quantize_rows<BlockIq1M>("iq1_m", kIq1m, src, dst, n, [](const BlockChoice& c, BlockIq1M& b) {
        for (int l = 0; l < 32; ++l) {
            const uint16_t p = c.point[l];  // bit 11: the minus delta
            b.qs[l] = static_cast<uint8_t>(p & 0xFF);
            const int nib = ((p >> 8) & 7) | ((p >> 11) << 3);
            b.qh[l / 2] = static_cast<uint8_t>(b.qh[l / 2] | (nib << (4 * (l % 2))));
        }
        for (int s = 0; s < 16; ++s) b.scales[s / 4] = static_cast<uint16_t>(b.scales[s / 4] | (c.level[s] << (3 * (s % 4))));
        for (int w = 0; w < 4; ++w) b.scales[w] = static_cast<uint16_t>(b.scales[w] | (((c.d16 >> (4 * w)) & 0xF) << 12));
    });
}

}  // namespace strata
