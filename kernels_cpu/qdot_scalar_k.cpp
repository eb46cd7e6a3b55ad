// Scalar integer dot products of the 256-element weight formats with Q8_K activations: the
// oracle the SIMD variants are tested against. Per super-block the scaled integer sums (quants
// times sub-block scales; mins times Q8_K's bsums) are exact int32; the block's float
// contribution dx·(d·isum − dmin·imin) is added to one float accumulator in block order.
#include <cstdint>

#include "kernels_cpu/qdot.h"
#include "quant/blocks.h"
#include "quant/half.h"

namespace strata::cpu {
namespace {

inline float f16(uint16_t h) {
    return fp16_to_fp32(h);
}

// Σ over 16 elements of the sub-block i (16 elements each) of the Q8_K bsums.
inline int32_t bsum16(const BlockQ8_K& x, int i) {
    return x.bsums[i];
}

inline int32_t bsum32(const BlockQ8_K& x, int s) {
    return x.bsums[2 * s] + x.bsums[2 * s + 1];
}

float block_dot(const BlockQ2_K& w, const BlockQ8_K& x) {
    int32_t isum = 0, imin = 0;
    for (int i = 0; i < 16; ++i) {  // sub-block of 16: e = 16i + t
        int32_t part = 0;
        for (int t = 0; t < 16; ++t) {
            const int e = 16 * i + t;
            const int h = e / 128, j = (e % 128) / 32, l = e % 32;
            part += ((w.qs[32 * h + l] >> (2 * j)) & 3) * x.qs[e];
        }
        isum += (w.scales[i] & 0xF) * part;
        imin += (w.scales[i] >> 4) * bsum16(x, i);
    }
    return x.d * (f16(w.d) * static_cast<float>(isum) - f16(w.dmin) * static_cast<float>(imin));
}

// q = q2 − 4·(1 − hbit) = (q2 + 4·hbit) − 4, so Σ q·x = Σ (q2 + 4·hbit)·x − 4·bsum.
float block_dot(const BlockQ3_K& w, const BlockQ8_K& x) {
    int32_t isum = 0;
    for (int i = 0; i < 16; ++i) {
        const int low4 = i < 8 ? (w.scales[i] & 0xF) : (w.scales[i - 8] >> 4);
        const int high2 = (w.scales[8 + i % 4] >> (2 * (i / 4))) & 3;
        const int sc = (low4 | (high2 << 4)) - 32;
        int32_t part = 0;
        for (int t = 0; t < 16; ++t) {
            const int e = 16 * i + t;
            const int h = e / 128, j = (e % 128) / 32, l = e % 32;
            const int q2 = (w.qs[32 * h + l] >> (2 * j)) & 3;
            const int hbit = (w.hmask[l] >> (4 * h + j)) & 1;
            part += (q2 + 4 * hbit) * x.qs[e];
        }
        isum += sc * (part - 4 * bsum16(x, i));
    }
    return x.d * (f16(w.d) * static_cast<float>(isum));
}

// Q4_K and Q5_K share everything but the fifth bit (HasHigh: Q5_K's qh).
template <bool HasHigh, typename Block>
float block_dot_k4(const Block& w, const BlockQ8_K& x) {
    int32_t isum = 0, imin = 0;
    for (int s = 0; s < 8; ++s) {
        const ScaleMin sm = unpack_scale_min_k4(w.scales, s);
        const uint8_t* qs = w.qs + 32 * (s / 2);
        const int shift = 4 * (s % 2);
        int32_t part = 0;
        for (int l = 0; l < 32; ++l) {
            int q = (qs[l] >> shift) & 0xF;
            if constexpr (HasHigh) q |= ((w.qh[l] >> s) & 1) << 4;
            part += q * x.qs[32 * s + l];
        }
        isum += sm.sc * part;
        imin += sm.m * bsum32(x, s);
    }
    return x.d * (f16(w.d) * static_cast<float>(isum) - f16(w.dmin) * static_cast<float>(imin));
}

float block_dot(const BlockQ4_K& w, const BlockQ8_K& x) { return block_dot_k4<false>(w, x); }

float block_dot(const BlockQ5_K& w, const BlockQ8_K& x) { return block_dot_k4<true>(w, x); }

// q is stored with a +32 bias: Σ (q − 32)·x = Σ q·x − 32·bsum.
float block_dot(const BlockQ6_K& w, const BlockQ8_K& x) {
    int32_t isum = 0;
    for (int i = 0; i < 16; ++i) {
        int32_t part = 0;
        for (int t = 0; t < 16; ++t) {
            const int e = 16 * i + t;
            const int h = e / 128, k = (e % 128) / 32, l = e % 32;
            const int lo4 = (w.ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xF;
            const int hi2 = (w.qh[32 * h + l] >> (2 * k)) & 3;
            part += (lo4 | (hi2 << 4)) * x.qs[e];
        }
        isum += w.scales[i] * (part - 32 * bsum16(x, i));
    }
    return x.d * (f16(w.d) * static_cast<float>(isum));
}

float block_dot(const BlockIq4Xs& w, const BlockQ8_K& x) {
    int32_t isum = 0;
    for (int ib = 0; ib < 8; ++ib) {
        const int ls = ((w.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                       (((w.scales_h >> (2 * ib)) & 3) << 4);
        const uint8_t* qs = w.qs + 16 * ib;
        const int8_t* xq = x.qs + 32 * ib;
        int32_t part = 0;
        for (int j = 0; j < 16; ++j) {
            part += kIq4nlValues[qs[j] & 0xF] * xq[j];
            part += kIq4nlValues[qs[j] >> 4] * xq[j + 16];
        }
        isum += (ls - 32) * part;
    }
    return x.d * (f16(w.d) * static_cast<float>(isum));
}

template <typename WBlock>
void dot_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    const auto* wb = static_cast<const WBlock*>(w);
    for (int c = 0; c < n_cols; ++c) {
        const auto* xb = reinterpret_cast<const BlockQ8_K*>(x.row(c));
        float sum = 0.0f;
        for (int64_t b = 0; b < n_blocks; ++b)
            sum += block_dot(wb[b], xb[b]);
        out[c] = sum;
    }
}

}  // namespace

QDotFn qdot_scalar_k(GgmlType type) {
    switch (type) {
        case GgmlType::Q2_K: return dot_rows<BlockQ2_K>;
        case GgmlType::Q3_K: return dot_rows<BlockQ3_K>;
        case GgmlType::Q4_K: return dot_rows<BlockQ4_K>;
        case GgmlType::Q5_K: return dot_rows<BlockQ5_K>;
        case GgmlType::Q6_K: return dot_rows<BlockQ6_K>;
        case GgmlType::IQ4_XS: return dot_rows<BlockIq4Xs>;
        default: return nullptr;
    }
}

}  // namespace strata::cpu
