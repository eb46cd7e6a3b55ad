// Reference dequantization of the 32-element formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, IQ4_NL
// and MXFP4 (docs/FORMATS.md §2.2). Element j of a block is the low nibble of qs[j], element j+16
// the high.
#include <bit>
#include <cstring>

#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace strata {
namespace {

// The 5th bits of Q5_0/Q5_1, as one little-endian u32 (bit j belongs to element j).
uint32_t load_qh(const uint8_t qh[4]) {
    uint32_t v = 0;
    std::memcpy(&v, qh, sizeof(v));
    return v;
}

// MXFP4's E8M0 exponent, halved because the value table is doubled: 2^(e - 128), exactly.
float e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
    return std::bit_cast<float>(bits);
}

}  // namespace

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q4_0", n, kQk32);
    const auto* blocks = static_cast<const BlockQ4_0*>(src);
    for (int64_t b = 0; b < n / kQk32; ++b, dst += kQk32) {
        const float d = fp16_to_fp32(blocks[b].d);
        for (int j = 0; j < kQk32 / 2; ++j) {
            dst[j] = d * static_cast<float>((blocks[b].qs[j] & 0xF) - 8);
            dst[j + 16] = d * static_cast<float>((blocks[b].qs[j] >> 4) - 8);
        }
    }
}

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q4_1", n, kQk32);
    const auto* blocks = static_cast<const BlockQ4_1*>(src);
    for (int64_t b = 0; b < n / kQk32; ++b, dst += kQk32) {
        const float d = fp16_to_fp32(blocks[b].d);
        const float m = fp16_to_fp32(blocks[b].m);
        for (int j = 0; j < kQk32 / 2; ++j) {
            dst[j] = d * static_cast<float>(blocks[b].qs[j] & 0xF) + m;
            dst[j + 16] = d * static_cast<float>(blocks[b].qs[j] >> 4) + m;
        }
    }
}

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q5_0", n, kQk32);
    const auto* blocks = static_cast<const BlockQ5_0*>(src);
    for (int64_t b = 0; b < n / kQk32; ++b, dst += kQk32) {
        const float d = fp16_to_fp32(blocks[b].d);
        const uint32_t qh = load_qh(blocks[b].qh);
        for (int j = 0; j < kQk32 / 2; ++j) {
            const int lo = (blocks[b].qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
            const int hi = (blocks[b].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
            dst[j] = d * static_cast<float>(lo - 16);
            dst[j + 16] = d * static_cast<float>(hi - 16);
        }
    }
}

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q5_1", n, kQk32);
    const auto* blocks = static_cast<const BlockQ5_1*>(src);
    for (int64_t b = 0; b < n / kQk32; ++b, dst += kQk32) {
        const float d = fp16_to_fp32(blocks[b].d);
        const float m = fp16_to_fp32(blocks[b].m);
        const uint32_t qh = load_qh(blocks[b].qh);
        for (int j = 0; j < kQk32 / 2; ++j) {
            const int lo = (blocks[b].qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
            const int hi = (blocks[b].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
            dst[j] = d * static_cast<float>(lo) + m;
            dst[j + 16] = d * static_cast<float>(hi) + m;
        }
    }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q8_0", n, kQk32);
    const auto* blocks = static_cast<const BlockQ8_0*>(src);
    for (int64_t b = 0; b < n / kQk32; ++b, dst += kQk32) {
        const float d = fp16_to_fp32(blocks[b].d);
        for (int j = 0; j < kQk32; ++j) dst[j] = static_cast<float>(blocks[b].qs[j]) * d;
    }
}

void dequantize_q8_1(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q8_1", n, kQk32);
    const auto* blocks = static_cast<const BlockQ8_1*>(src);
    for (int64_t b = 0; b < n / kQk32; ++b, dst += kQk32) {
        const float d = fp16_to_fp32(blocks[b].d);  // s is redundant (d * sum) and not read
        for (int j = 0; j < kQk32; ++j) dst[j] = static_cast<float>(blocks[b].qs[j]) * d;
    }
}

void dequantize_iq4_nl(const void* src, float* dst, int64_t n) {
    require_whole_blocks("iq4_nl", n, kQk32);
    const auto* blocks = static_cast<const BlockIq4Nl*>(src);
    for (int64_t b = 0; b < n / kQk32; ++b, dst += kQk32) {
        const float d = fp16_to_fp32(blocks[b].d);
        for (int j = 0; j < kQk32 / 2; ++j) {
            dst[j] = d * static_cast<float>(kIq4nlValues[blocks[b].qs[j] & 0xF]);
            dst[j + 16] = d * static_cast<float>(kIq4nlValues[blocks[b].qs[j] >> 4]);
        }
    }
}

void dequantize_mxfp4(const void* src, float* dst, int64_t n) {
    require_whole_blocks("mxfp4", n, kQk32);
    const auto* blocks = static_cast<const BlockMxfp4*>(src);
    for (int64_t b = 0; b < n / kQk32; ++b, dst += kQk32) {
        const float d = e8m0_to_fp32_half(blocks[b].e);
        for (int j = 0; j < kQk32 / 2; ++j) {
            dst[j] = d * static_cast<float>(kMxfp4Values[blocks[b].qs[j] & 0xF]);
            dst[j + 16] = d * static_cast<float>(kMxfp4Values[blocks[b].qs[j] >> 4]);
        }
    }
}

}  // namespace strata
