// Reference dequantization of the ternary formats TQ1_0 and TQ2_0 (layouts in blocks.h):
// y = d * (t - 1), bit-identical to gguf-py 0.19.
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace strata {
namespace {

// Trit k (0..4) of a TQ1_0 byte: the byte holds the trits as a base-3 fraction of 256.
inline int tq1_trit(uint8_t byte, int k) {
    static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const uint8_t shifted = static_cast<uint8_t>(byte * kPow3[k]);  // mod 256 on purpose
    return (shifted * 3) >> 8;
}

}  // namespace

void dequantize_tq1_0(const void* src, float* dst, int64_t n) {
    require_whole_blocks("tq1_0", n, kQkK);
    const auto* blocks = static_cast<const BlockTq1_0*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockTq1_0& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        for (int k = 0; k < 5; ++k) {
            for (int t = 0; t < 32; ++t) dst[32 * k + t] = d * static_cast<float>(tq1_trit(blk.qs[t], k) - 1);
            for (int t = 0; t < 16; ++t)
                dst[160 + 16 * k + t] = d * static_cast<float>(tq1_trit(blk.qs[32 + t], k) - 1);
        }
        for (int k = 0; k < 4; ++k) {
            for (int t = 0; t < 4; ++t) dst[240 + 4 * k + t] = d * static_cast<float>(tq1_trit(blk.qh[t], k) - 1);
        }
    }
}

void dequantize_tq2_0(const void* src, float* dst, int64_t n) {
    require_whole_blocks("tq2_0", n, kQkK);
    const auto* blocks = static_cast<const BlockTq2_0*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockTq2_0& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        for (int e = 0; e < kQkK; ++e) {
            const int q = (blk.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            dst[e] = d * static_cast<float>(q - 1);
        }
    }
}

}  // namespace strata
