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

// Quants of x at the inverse scales id[0..N) (clamped to [-8, 7]), each d refitted and rounded
// to f16. The N candidates run side by side: each candidate's sums keep their own order (so
// the results are those of one candidate at a time), and the N dependency chains overlap.
template <int N>
void fit_at(const float* x, const float* id, Fit* f) {
    double xq[N] = {}, qq[N] = {};
    for (int j = 0; j < kBlock; ++j) {
        for (int c = 0; c < N; ++c) {
            // std::lround (half away from zero) without the library call: v ± 0.5 is exact in
            // double for a float v, and the conversion truncates toward zero.
            const double v = static_cast<double>(x[j] * id[c]);
            const int q = static_cast<int>(v + std::copysign(0.5, v));
            f[c].q[j] = q < -8 ? -8 : (q > 7 ? 7 : q);
            xq[c] += static_cast<double>(x[j]) * f[c].q[j];
            qq[c] += static_cast<double>(f[c].q[j]) * f[c].q[j];
        }
    }
    for (int c = 0; c < N; ++c) {
        f[c].d = qq[c] > 0 ? fp16_to_fp32(fp32_to_fp16(static_cast<float>(xq[c] / qq[c]))) : 0.0f;
        f[c].err = 0;
    }
    for (int j = 0; j < kBlock; ++j) {
        for (int c = 0; c < N; ++c) {
            const double e = static_cast<double>(x[j]) - static_cast<double>(f[c].d) * f[c].q[j];
            f[c].err += e * e;
        }
    }
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
            // 42 candidates, m landing on -8 or on 7 with ±10% slack, in the order is = -10..10,
            // then -8 before 7; the first of equal errors wins.
            constexpr int kCandidates = 42, kSide = 6;
            float ids[kCandidates];
            for (int is = -10, i = 0; is <= 10; ++is) {
                for (const float top : {-8.0f, 7.0f}) ids[i++] = (top + 0.1f * static_cast<float>(is)) / m;
            }
            for (int c0 = 0; c0 < kCandidates; c0 += kSide) {
                Fit f[kSide];
                fit_at<kSide>(src, ids + c0, f);
                for (const Fit& c : f)
                    if (c.err < best.err) best = c;
            }
        } else {
            const float zero = 0.0f;
            fit_at<1>(src, &zero, &best);
        }
        blocks[b].d = fp32_to_fp16(best.d);
        for (int j = 0; j < kBlock / 2; ++j) {
            blocks[b].qs[j] = static_cast<uint8_t>((best.q[j] + 8) | ((best.q[j + 16] + 8) << 4));
        }
    }
}

}  // namespace strata
