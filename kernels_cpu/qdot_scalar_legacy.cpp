// Scalar integer dot products of the 32-element weight formats with Q8_0 / Q8_1 activations:
// the oracle the SIMD variants are tested against. Per block the integer sum is exact; the
// block's float contribution is added to one float accumulator in block order.
#include <cstdint>
#include <cstring>

#include "kernels_cpu/qdot.h"
#include "quant/blocks.h"
#include "quant/half.h"

namespace strata::cpu {
namespace {

inline float f16(uint16_t h) {
    return fp16_to_fp32(h);
}

// Element j of a 32-element block: low nibble of qs[j] for j < 16, high nibble of qs[j-16].
inline int nibble(const uint8_t* qs, int j) {
    return j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
}

inline int fifth_bit(const uint8_t qh[4], int j) {
    uint32_t bits;
    std::memcpy(&bits, qh, sizeof(bits));
    return static_cast<int>((bits >> j) & 1u);
}

// Each block_dot returns the block's contribution in float: scale · exact integer sum.
float block_dot(const BlockQ4_0& w, const BlockQ8_0& x) {
    int32_t sum = 0;
    for (int j = 0; j < kQk32; ++j)
        sum += (nibble(w.qs, j) - 8) * x.qs[j];
    return (f16(w.d) * f16(x.d)) * static_cast<float>(sum);
}

float block_dot(const BlockQ5_0& w, const BlockQ8_0& x) {
    int32_t sum = 0;
    for (int j = 0; j < kQk32; ++j)
        sum += ((nibble(w.qs, j) | (fifth_bit(w.qh, j) << 4)) - 16) * x.qs[j];
    return (f16(w.d) * f16(x.d)) * static_cast<float>(sum);
}

float block_dot(const BlockQ8_0& w, const BlockQ8_0& x) {
    int32_t sum = 0;
    for (int j = 0; j < kQk32; ++j)
        sum += w.qs[j] * x.qs[j];
    return (f16(w.d) * f16(x.d)) * static_cast<float>(sum);
}

float block_dot(const BlockIq4Nl& w, const BlockQ8_0& x) {
    int32_t sum = 0;
    for (int j = 0; j < kQk32; ++j)
        sum += kIq4nlValues[nibble(w.qs, j)] * x.qs[j];
    return (f16(w.d) * f16(x.d)) * static_cast<float>(sum);
}

// y = q·d + m, and x.s = f16(dx·Σ qx), so Σ y·x = d·dx·Σ q·qx + m·s.
float block_dot(const BlockQ4_1& w, const BlockQ8_1& x) {
    int32_t sum = 0;
    for (int j = 0; j < kQk32; ++j)
        sum += nibble(w.qs, j) * x.qs[j];
    return (f16(w.d) * f16(x.d)) * static_cast<float>(sum) + f16(w.m) * f16(x.s);
}

float block_dot(const BlockQ5_1& w, const BlockQ8_1& x) {
    int32_t sum = 0;
    for (int j = 0; j < kQk32; ++j)
        sum += (nibble(w.qs, j) | (fifth_bit(w.qh, j) << 4)) * x.qs[j];
    return (f16(w.d) * f16(x.d)) * static_cast<float>(sum) + f16(w.m) * f16(x.s);
}

// The oracle reads every scale from the blocks themselves (never x.d), so a wrong expanded
// scale in a SIMD variant shows up against it.
template <typename WBlock, typename XBlock>
void dot_rows(const void* w, const QDotActs& x, int64_t n_blocks, int n_cols, float* out) {
    const auto* wb = static_cast<const WBlock*>(w);
    for (int c = 0; c < n_cols; ++c) {
        const auto* xb = reinterpret_cast<const XBlock*>(x.row(c));
        float sum = 0.0f;
        for (int64_t b = 0; b < n_blocks; ++b)
            sum += block_dot(wb[b], xb[b]);
        out[c] = sum;
    }
}

}  // namespace

QDotFn qdot_scalar_legacy(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0: return dot_rows<BlockQ4_0, BlockQ8_0>;
        case GgmlType::Q4_1: return dot_rows<BlockQ4_1, BlockQ8_1>;
        case GgmlType::Q5_0: return dot_rows<BlockQ5_0, BlockQ8_0>;
        case GgmlType::Q5_1: return dot_rows<BlockQ5_1, BlockQ8_1>;
        case GgmlType::Q8_0: return dot_rows<BlockQ8_0, BlockQ8_0>;
        case GgmlType::IQ4_NL: return dot_rows<BlockIq4Nl, BlockQ8_0>;
        default: return nullptr;
    }
}

}  // namespace strata::cpu
