// Reference dequantization of the 256-element super-block formats: Q2_K..Q6_K, Q8_K and IQ4_XS
// (docs/FORMATS.md §2.2). The sub-block scale product (d*sc, dmin*m) is rounded to float32 before
// it meets the quant, as in ggml and gguf-py; -ffp-contract=off keeps it that way.
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace strata {

void dequantize_q2_k(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q2_K", n, kQkK);
    const auto* blocks = static_cast<const BlockQ2_K*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockQ2_K& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        const float dmin = fp16_to_fp32(blk.dmin);
        // Element e = 128*h + 32*j + t holds bits 2j..2j+1 of qs[32*h + t]; scale index e/16.
        for (int e = 0; e < kQkK; ++e) {
            const int h = e / 128, j = (e % 128) / 32, t = e % 32;
            const uint8_t sc = blk.scales[e / 16];
            const float dl = d * static_cast<float>(sc & 0xF);
            const float ml = dmin * static_cast<float>(sc >> 4);
            const int q = (blk.qs[32 * h + t] >> (2 * j)) & 3;
            dst[e] = dl * static_cast<float>(q) - ml;
        }
    }
}

void dequantize_q3_k(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q3_K", n, kQkK);
    const auto* blocks = static_cast<const BlockQ3_K*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockQ3_K& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        float dl[16];
        for (int i = 0; i < 16; ++i) {
            // 6-bit scale i: low 4 bits from bytes 0-7 (low nibbles, then high nibbles),
            // high 2 bits from bytes 8-11 (bits 2*(i/4) of byte 8 + i%4); stored with +32 bias.
            const int low4 = i < 8 ? (blk.scales[i] & 0xF) : (blk.scales[i - 8] >> 4);
            const int high2 = (blk.scales[8 + i % 4] >> (2 * (i / 4))) & 3;
            dl[i] = d * static_cast<float>((low4 | (high2 << 4)) - 32);
        }
        // Element e = 128*h + 32*j + t: 2 low bits at bit 2j of qs[32*h + t]; the high bit is
        // bit 4h + j of hmask[t], and a clear high bit means an offset of -4.
        for (int e = 0; e < kQkK; ++e) {
            const int h = e / 128, j = (e % 128) / 32, t = e % 32;
            const int q2 = (blk.qs[32 * h + t] >> (2 * j)) & 3;
            const int hbit = (blk.hmask[t] >> (4 * h + j)) & 1;
            dst[e] = dl[e / 16] * static_cast<float>(q2 - (hbit ? 0 : 4));
        }
    }
}

void dequantize_q4_k(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q4_K", n, kQkK);
    const auto* blocks = static_cast<const BlockQ4_K*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockQ4_K& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        const float dmin = fp16_to_fp32(blk.dmin);
        // Sub-block s (32 elements): nibble s%2 of qs[32*(s/2) + l].
        for (int s = 0; s < 8; ++s) {
            const ScaleMin sm = unpack_scale_min_k4(blk.scales, s);
            const float ds = d * static_cast<float>(sm.sc);
            const float dm = dmin * static_cast<float>(sm.m);
            const uint8_t* qs = blk.qs + 32 * (s / 2);
            const int shift = 4 * (s % 2);
            for (int l = 0; l < 32; ++l) {
                dst[32 * s + l] = ds * static_cast<float>((qs[l] >> shift) & 0xF) - dm;
            }
        }
    }
}

void dequantize_q5_k(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q5_K", n, kQkK);
    const auto* blocks = static_cast<const BlockQ5_K*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockQ5_K& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        const float dmin = fp16_to_fp32(blk.dmin);
        for (int s = 0; s < 8; ++s) {
            const ScaleMin sm = unpack_scale_min_k4(blk.scales, s);
            const float ds = d * static_cast<float>(sm.sc);
            const float dm = dmin * static_cast<float>(sm.m);
            const uint8_t* qs = blk.qs + 32 * (s / 2);
            const int shift = 4 * (s % 2);
            for (int l = 0; l < 32; ++l) {
                const int q = ((qs[l] >> shift) & 0xF) | (((blk.qh[l] >> s) & 1) << 4);
                dst[32 * s + l] = ds * static_cast<float>(q) - dm;
            }
        }
    }
}

void dequantize_q6_k(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q6_K", n, kQkK);
    const auto* blocks = static_cast<const BlockQ6_K*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockQ6_K& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        // Element e = 128*h + 32*k + l: low 4 bits are nibble k/2 of ql[64*h + 32*(k%2) + l],
        // high 2 bits are bits 2k..2k+1 of qh[32*h + l]; q is stored with +32 bias.
        for (int e = 0; e < kQkK; ++e) {
            const int h = e / 128, k = (e % 128) / 32, l = e % 32;
            const int lo4 = (blk.ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
            const int hi2 = (blk.qh[32 * h + l] >> (2 * k)) & 3;
            const float dl = d * static_cast<float>(blk.scales[e / 16]);
            dst[e] = dl * static_cast<float>((lo4 | (hi2 << 4)) - 32);
        }
    }
}

void dequantize_q8_k(const void* src, float* dst, int64_t n) {
    require_whole_blocks("q8_K", n, kQkK);
    const auto* blocks = static_cast<const BlockQ8_K*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        for (int e = 0; e < kQkK; ++e) dst[e] = blocks[b].d * static_cast<float>(blocks[b].qs[e]);
    }
}

void dequantize_iq4_xs(const void* src, float* dst, int64_t n) {
    require_whole_blocks("iq4_xs", n, kQkK);
    const auto* blocks = static_cast<const BlockIq4Xs*>(src);
    for (int64_t b = 0; b < n / kQkK; ++b, dst += kQkK) {
        const BlockIq4Xs& blk = blocks[b];
        const float d = fp16_to_fp32(blk.d);
        for (int ib = 0; ib < 8; ++ib) {  // 8 sub-blocks of 32, 6-bit scales with +32 bias
            const int ls = ((blk.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                           (((blk.scales_h >> (2 * ib)) & 3) << 4);
            const float dl = d * static_cast<float>(ls - 32);
            const uint8_t* qs = blk.qs + 16 * ib;
            float* y = dst + 32 * ib;
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
                y[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
            }
        }
    }
}

}  // namespace strata
