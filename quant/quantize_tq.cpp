// Reference quantizers of the ternary formats TQ1_0 and TQ2_0, bit-identical to gguf-py 0.19:
// d = max |x| (f16), t = round(x / d) + 1 (half away from zero) in {0, 1, 2}.
#include <cmath>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace strata {
namespace {

// The trits of one 256-element block and its f16 scale.
uint16_t ternarize(const float* x, uint8_t* t) {
    float amax = 0.0f;
    for (int e = 0; e < kQkK; ++e) amax = std::fmax(amax, std::fabs(x[e]));
    const float id = amax == 0.0f ? 0.0f : 1.0f / amax;
    for (int e = 0; e < kQkK; ++e) {
        // round(x/d) is -1, 0 or 1 for finite x; NaN (from non-finite inputs) becomes 0 here
        // instead of an undefined float-to-int conversion.
        const float r = std::round(x[e] * id);
        t[e] = r > 0.5f ? 2 : (r < -0.5f ? 0 : 1);
    }
    return fp32_to_fp16(amax);
}

// Five (or four) trits as a base-3 fraction of 256, rounded up: the first trit is the top digit.
uint8_t pack_trits(const uint8_t* t, int stride, int count) {
    unsigned v = 0;
    for (int k = 0; k < 5; ++k) v = 3 * v + (k < count ? t[k * stride] : 0);
    return static_cast<uint8_t>((v * 256 + 242) / 243);
}

}  // namespace

void quantize_tq1_0(const float* src, void* dst, int64_t n) {
    require_whole_blocks("tq1_0", n, kQkK);
    auto* blocks = static_cast<BlockTq1_0*>(dst);
    for (int64_t b = 0; b < n / kQkK; ++b, src += kQkK) {
        uint8_t t[kQkK];
        BlockTq1_0& blk = blocks[b];
        blk.d = ternarize(src, t);
        for (int i = 0; i < 32; ++i) blk.qs[i] = pack_trits(t + i, 32, 5);
        for (int i = 0; i < 16; ++i) blk.qs[32 + i] = pack_trits(t + 160 + i, 16, 5);
        for (int i = 0; i < 4; ++i) blk.qh[i] = pack_trits(t + 240 + i, 4, 4);
    }
}

void quantize_tq2_0(const float* src, void* dst, int64_t n) {
    require_whole_blocks("tq2_0", n, kQkK);
    auto* blocks = static_cast<BlockTq2_0*>(dst);
    for (int64_t b = 0; b < n / kQkK; ++b, src += kQkK) {
        uint8_t t[kQkK];
        BlockTq2_0& blk = blocks[b];
        blk.d = ternarize(src, t);
        for (int i = 0; i < 64; ++i) {
            const int h = i / 32, l = i % 32;
            blk.qs[i] = static_cast<uint8_t>(t[128 * h + l] | t[128 * h + 32 + l] << 2 |
                                             t[128 * h + 64 + l] << 4 | t[128 * h + 96 + l] << 6);
        }
    }
}

}  // namespace strata
