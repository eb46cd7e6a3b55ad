// Reference quantizers of the 32-element formats Q4_0, Q5_0, Q8_0 (bit-identical to ggml's
// reference and gguf-py) and Q8_1. Rules and error bounds: quant/reference.h.
#include <cmath>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace strata {
namespace {

// The signed value of largest magnitude; the first one wins a tie, as in ggml and numpy.argmax.
float signed_absmax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

float absmax(const float* x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    return amax;
}

// 1/d, or 0 where that is not finite (d == 0, or d so tiny that 1/d overflows: such blocks
// store d16 == 0 and dequantize to zeros anyway, and the float->int casts stay defined).
float inverse_or_zero(float d) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    return std::isfinite(id) ? id : 0.0f;
}

// v clamped to [lo, hi] (NaN gives lo), then truncated: the float -> int conversion stays defined
// whatever the input. For finite inputs in range the clamp never fires.
int clamp_to_int(float v, int lo, int hi) {
    return static_cast<int>(std::fmin(std::fmax(v, static_cast<float>(lo)), static_cast<float>(hi)));
}

// Q8_0/Q8_1 quants: d = amax/127, q = round(x * (1/d)), half away from zero. Returns d.
float quantize_8bit(const float* x, int8_t* qs) {
    const float d = absmax(x, kQk32) / 127.0f;
    const float id = inverse_or_zero(d);
    for (int j = 0; j < kQk32; ++j) qs[j] = static_cast<int8_t>(clamp_to_int(std::round(x[j] * id), -127, 127));
    return d;
}

// Q4_0/Q5_0 quants in 0..levels-1 with d = max / -(levels/2). Returns d.
float quantize_offset(const float* x, int levels, uint8_t* q) {
    const float half = static_cast<float>(levels / 2);
    const float d = signed_absmax(x, kQk32) / -half;
    const float id = inverse_or_zero(d);
    for (int j = 0; j < kQk32; ++j) {
        // x*id is in [-half, half], so the sum is positive and truncation is trunc(); the -max
        // end (x*id = half) lands on `levels` and is clipped to levels-1.
        q[j] = static_cast<uint8_t>(clamp_to_int(x[j] * id + (half + 0.5f), 0, levels - 1));
    }
    return d;
}

}  // namespace

void quantize_q8_0(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q8_0", n, kQk32);
    auto* blocks = static_cast<BlockQ8_0*>(dst);
    for (int64_t b = 0; b < n / kQk32; ++b, src += kQk32) {
        blocks[b].d = fp32_to_fp16(quantize_8bit(src, blocks[b].qs));
    }
}

void quantize_q8_1(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q8_1", n, kQk32);
    auto* blocks = static_cast<BlockQ8_1*>(dst);
    for (int64_t b = 0; b < n / kQk32; ++b, src += kQk32) {
        const float d = quantize_8bit(src, blocks[b].qs);
        int sum = 0;
        for (int j = 0; j < kQk32; ++j) sum += blocks[b].qs[j];
        blocks[b].d = fp32_to_fp16(d);
        blocks[b].s = fp32_to_fp16(static_cast<float>(sum) * d);
    }
}

void quantize_q4_0(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q4_0", n, kQk32);
    auto* blocks = static_cast<BlockQ4_0*>(dst);
    for (int64_t b = 0; b < n / kQk32; ++b, src += kQk32) {
        uint8_t q[kQk32];
        blocks[b].d = fp32_to_fp16(quantize_offset(src, 16, q));
        for (int j = 0; j < kQk32 / 2; ++j) blocks[b].qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
    }
}

void quantize_q5_0(const float* src, void* dst, int64_t n) {
    require_whole_blocks("q5_0", n, kQk32);
    auto* blocks = static_cast<BlockQ5_0*>(dst);
    for (int64_t b = 0; b < n / kQk32; ++b, src += kQk32) {
        uint8_t q[kQk32];
        blocks[b].d = fp32_to_fp16(quantize_offset(src, 32, q));
        uint32_t qh = 0;
        for (int j = 0; j < kQk32 / 2; ++j) {
            blocks[b].qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
            qh |= static_cast<uint32_t>(q[j] >> 4) << j;
            qh |= static_cast<uint32_t>(q[j + 16] >> 4) << (j + 16);
        }
        for (int k = 0; k < 4; ++k) blocks[b].qh[k] = static_cast<uint8_t>(qh >> (8 * k));
    }
}

}  // namespace strata
