// The scalar row-op table (row_ops.h): plain C++, the oracle the SIMD tables are tested against
// and the fallback on CPUs without AVX2. g++ auto-vectorises the simple loops for the baseline
// ISA; exp and tanh come from libm.
#include <cmath>

#include "kernels_cpu/row_ops.h"
#include "quant/half.h"

namespace strata::cpu {
namespace {

// Σ x² with float products summed in double (as ggml's CPU norm does), 4 partial sums.
double sum_squares(const float* x, int64_t n) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        for (int j = 0; j < 4; ++j)
            acc[j] += static_cast<double>(x[i + j] * x[i + j]);
    }
    for (; i < n; ++i)
        acc[0] += static_cast<double>(x[i] * x[i]);
    return (acc[0] + acc[2]) + (acc[1] + acc[3]);
}

void scale_mul(const float* x, const float* w, float inv, float* y, int64_t n) {
    if (w != nullptr) {
        for (int64_t i = 0; i < n; ++i)
            y[i] = (x[i] * inv) * w[i];
    } else {
        for (int64_t i = 0; i < n; ++i)
            y[i] = x[i] * inv;
    }
}

// Pair i is (x[i·stride], x[i·stride + partner]).
void rope_pairs(float* x, const float* c, const float* s, int64_t half, int64_t stride,
                int64_t partner) {
    for (int64_t i = 0; i < half; ++i) {
        float* a = x + i * stride;
        float* b = a + partner;
        const float x0 = *a;
        const float x1 = *b;
        *a = x0 * c[i] - x1 * s[i];
        *b = x0 * s[i] + x1 * c[i];
    }
}

void rope_norm(float* x, const float* c, const float* s, int64_t half) {
    rope_pairs(x, c, s, half, 2, 1);
}

void rope_neox(float* x, const float* c, const float* s, int64_t half) {
    rope_pairs(x, c, s, half, 1, half);
}

void add(const float* a, const float* b, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] = a[i] + b[i];
}

void scale(float* x, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        x[i] *= s;
}

void softcap(float* x, float cap, int64_t n) {
    const float inv_cap = 1.0f / cap;
    for (int64_t i = 0; i < n; ++i)
        x[i] = cap * std::tanh(x[i] * inv_cap);
}

void silu_mul(const float* g, const float* u, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

void gelu_tanh_mul(const float* g, const float* u, float* y, int64_t n) {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    constexpr float kCoef = 0.044715f;
    for (int64_t i = 0; i < n; ++i) {
        const float x = g[i];
        y[i] = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoef * x * x))) * u[i];
    }
}

DequantizeFn find_dequantize(GgmlType) {
    return nullptr;  // quant/'s reference is the scalar kernel
}

QuantizeFn find_quantize(GgmlType) {
    return nullptr;
}

bool attention_supports(GgmlType, GgmlType, int64_t, int64_t) {
    return true;
}

// The input-major Q4_K product, in the SIMD kernels' order: per chunk, per row, the active
// columns' Σ x_j·q_j, then y += ds·acc − dm·Σ x_j.
void input_major_q4k(const InputMajorQ4K& w, const float* x, const uint32_t* masks, int64_t c0, int64_t c1,
                     int64_t /*ahead*/, float* y) {
    for (int64_t r = 0; r < w.n_out; ++r) y[r] = 0.0f;
    for (int64_t c = c0; c < c1; ++c) {
        if (masks[c] == 0) continue;
        float sx = 0.0f;
        for (uint32_t m = masks[c]; m != 0; m &= m - 1) sx += x[c * 32 + __builtin_ctz(m)];
        for (int64_t r = 0; r < w.n_out; ++r) {
            const int64_t byte = (r / 32) * 16 + (r % 32) % 16;
            const int shift = (r % 32) < 16 ? 0 : 4;
            float acc = 0.0f;
            for (uint32_t m = masks[c]; m != 0; m &= m - 1) {
                const int64_t j = c * 32 + __builtin_ctz(m);
                acc += x[j] * static_cast<float>((w.column(j)[byte] >> shift) & 0xF);
            }
            const float ds = fp16_to_fp32(w.d(c / 8)[r]) * static_cast<float>(w.scales(c)[r]);
            const float dm = fp16_to_fp32(w.dmin(c / 8)[r]) * static_cast<float>(w.mins(c)[r]);
            y[r] += ds * acc - dm * sx;
        }
    }
}

}  // namespace

const RowOps& row_ops_scalar() {
    static const RowOps ops{sum_squares,   scale_mul,       rope_norm,          rope_neox,
                            add,           scale,           softcap,            silu_mul,
                            gelu_tanh_mul, find_dequantize, find_quantize,      attention_supports,
                            attention_chunk_scalar, input_major_q4k};
    return ops;
}

}  // namespace strata::cpu
