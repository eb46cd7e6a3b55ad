// The neuron-major copy's quantizers (neuron_major_quant.h).
#include "engine/runtime/neuron_major_quant.h"

#include <cmath>

#include "engine/core/error.h"
#include "quant/blocks.h"
#include "quant/half.h"

namespace strata {
namespace {

constexpr int kBlock = 32;

struct Fit {
    float d = 0;
    double err = 0;
    int q[kBlock] = {};
};

// Quants of x at inverse scale id (clamped to [-8, 7]), d refitted and rounded to f16.
Fit fit_at(const float* x, float id) {
    Fit f;
    double xq = 0, qq = 0;
    for (int j = 0; j < kBlock; ++j) {
        const int q = static_cast<int>(std::lround(x[j] * id));
        f.q[j] = q < -8 ? -8 : (q > 7 ? 7 : q);
        xq += static_cast<double>(x[j]) * f.q[j];
        qq += static_cast<double>(f.q[j]) * f.q[j];
    }
    f.d = qq > 0 ? fp16_to_fp32(fp32_to_fp16(static_cast<float>(xq / qq))) : 0.0f;
    for (int j = 0; j < kBlock; ++j) {
        const double e = static_cast<double>(x[j]) - static_cast<double>(f.d) * f.q[j];
        f.err += e * e;
    }
    return f;
}

}  // namespace

void quantize_q4_0_mse(const float* src, void* dst, int64_t n) {
    if (n % kBlock != 0) throw ArgumentError(cat("q4_0: ", n, " values are not whole blocks of ", kBlock));
    auto* blocks = static_cast<BlockQ4_0*>(dst);
    for (int64_t b = 0; b < n / kBlock; ++b, src += kBlock) {
        float m = 0;  // the value of largest magnitude, with its sign
        for (int j = 0; j < kBlock; ++j)
            if (std::fabs(src[j]) > std::fabs(m)) m = src[j];
        Fit best;
        best.err = INFINITY;
        if (m != 0.0f) {
            for (int is = -10; is <= 10; ++is) {
                for (const float top : {-8.0f, 7.0f}) {  // m lands on -8 or on 7
                    const Fit f = fit_at(src, (top + 0.1f * static_cast<float>(is)) / m);
                    if (f.err < best.err) best = f;
                }
            }
        } else {
            best = fit_at(src, 0.0f);
        }
        blocks[b].d = fp32_to_fp16(best.d);
        for (int j = 0; j < kBlock / 2; ++j) {
            blocks[b].qs[j] = static_cast<uint8_t>((best.q[j] + 8) | ((best.q[j + 16] + 8) << 4));
        }
    }
}

}  // namespace strata
