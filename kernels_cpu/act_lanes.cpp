// Quantizers to the AVX-512 kernels' activation layouts (act_lanes.h): each block is quantized
// to Q8_K / Q8_0 by the fastest bit-identical quantizer of this CPU, then its quants are
// reordered (and offset where the layout says so) and the per-block floats written beside them.
#include "kernels_cpu/act_lanes.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "kernels_cpu/quantize_act.h"
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace strata::cpu {
namespace {

// Source element of the four bytes at group p, lane L (index 16·p + L), for one layout.
constexpr std::array<uint8_t, 64> word_sources(Lanes layout) {
    std::array<uint8_t, 64> src{};
    for (int p = 0; p < 4; ++p)
        for (int lane = 0; lane < 16; ++lane)
            src[static_cast<size_t>(16 * p + lane)] = static_cast<uint8_t>(lane_element(layout, p, lane, 0));
    return src;
}

constexpr std::array<uint8_t, 64> kSourcesK4 = word_sources(Lanes::K4);
constexpr std::array<uint8_t, 64> kSourcesK6 = word_sources(Lanes::K6);

// This CPU's fast twin of quant/'s reference quantizer to `type`, or the reference itself.
QuantizeFn fastest_quantizer(GgmlType type) {
    const QuantizeFn fast = fast_act_quantizer(type);
    return fast != nullptr ? fast : type_traits(type).quantize;
}

template <Lanes Layout>
void quantize_lanes(const float* src, void* dst, int64_t n) {
    require_whole_blocks(Layout == Lanes::K4 ? "q8_K lanes4" : "q8_K lanes6", n, kQkK);
    const std::array<uint8_t, 64>& sources = Layout == Lanes::K4 ? kSourcesK4 : kSourcesK6;
    static const QuantizeFn q8_k = fastest_quantizer(GgmlType::Q8_K);
    auto* out = static_cast<BlockQ8KLanes*>(dst);
    for (int64_t b = 0; b < n / kQkK; ++b, src += kQkK) {
        BlockQ8_K blk;
        q8_k(src, &blk, kQkK);
        BlockQ8KLanes& o = out[b];
        for (size_t w = 0; w < sources.size(); ++w)
            std::memcpy(o.qs + 4 * w, blk.qs + sources[w], 4);
        std::memset(o.aux, 0, sizeof(o.aux));
        if constexpr (Layout == Lanes::K4) {
            for (int j = 0; j < 8; ++j)  // bsums are exact sums of 16 quants
                o.aux[j] = static_cast<float>(blk.bsums[2 * j] + blk.bsums[2 * j + 1]);
        } else {
            for (int8_t& q : o.qs)
                q = static_cast<int8_t>(static_cast<uint8_t>(q) ^ 0x80u);  // q + 128 as uint8
        }
        o.aux[kLanesD] = blk.d;
    }
}

}  // namespace

void quantize_q8_0_pairs(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q8_0 pairs", n, kQk32);
    static const QuantizeFn q8_0 = fastest_quantizer(GgmlType::Q8_0);
    auto* out = static_cast<BlockQ8_0Pair*>(dst);
    const int64_t n_blocks = n / kQk32;
    for (int64_t b = 0; b < n_blocks; ++b, src += kQk32) {
        BlockQ8_0 blk;
        q8_0(src, &blk, kQk32);
        BlockQ8_0Pair& o = out[b / kPairBlocks];
        const int half = static_cast<int>(b % kPairBlocks);
        for (int i = 0; i < kQk32; ++i)
            o.qs[kQk32 * half + i] = static_cast<uint8_t>(static_cast<uint8_t>(blk.qs[i]) ^ 0x80u);
        std::fill_n(o.d + 8 * half, 8, fp16_to_fp32(blk.d));
        if (half == 0 && b + 1 == n_blocks) {  // half a pair: the missing block is zero
            std::fill_n(o.qs + kQk32, kQk32, uint8_t{0x80});
            std::fill_n(o.d + 8, 8, 0.0f);
        }
    }
}

void quantize_q8_k_lanes4(const float* src, void* dst, int64_t n) {
    quantize_lanes<Lanes::K4>(src, dst, n);
}

void quantize_q8_k_lanes6(const float* src, void* dst, int64_t n) {
    quantize_lanes<Lanes::K6>(src, dst, n);
}

}  // namespace strata::cpu
