// RoPE of the CPU backend: NORM and NEOX each match their formula (docs/FORMATS.md §3.1), differ
// from each other, leave dims past n_rot alone, and are the identity at position 0; YaRN matches
// the NTK-by-parts formula as Hugging Face writes it (a mix of inverse frequencies, then cos and
// sin scaled by 0.1·ln(factor) + 1). The whole-model oracle: tests/engine/runtime/rope_oracle_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;

constexpr double kRopeNmse = 1e-9;  // float angles at positions < 300: |Δθ| ~ 1e-5

// Reference rotation in double of x [head_dim, n_heads, n_tokens].
std::vector<double> reference_rope(const HostTensor& x, const int32_t* pos, const RopeParams& p) {
    const int64_t head_dim = x.t.ne[0], n_heads = x.t.ne[1], n_tokens = x.t.ne[2];
    const int64_t half = p.n_rot / 2;
    std::vector<double> y(x.f32(), x.f32() + x.size());
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t h = 0; h < n_heads; ++h) {
            double* v = y.data() + (t * n_heads + h) * head_dim;
            for (int64_t i = 0; i < half; ++i) {
                double theta = pos[t] * std::pow(double(p.freq_base), -2.0 * i / p.n_rot);
                if (p.freq_factors) theta /= p.freq_factors[i];
                theta *= p.freq_scale;
                const int64_t a = p.style == RopeStyle::Norm ? 2 * i : i;
                const int64_t b = p.style == RopeStyle::Norm ? 2 * i + 1 : i + half;
                const double x0 = v[a], x1 = v[b];
                v[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
                v[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
            }
        }
    }
    return y;
}

struct RopeCase {
    int64_t head_dim, n_heads, n_tokens;
    int n_rot;
};

TEST(CpuRope, NormAndNeoxMatchTheirFormulas) {
    CpuBackend backend(2);
    const std::vector<float> factors = {1.0f, 1.5f, 2.0f, 4.0f, 8.0f, 1.0f, 3.0f, 1.25f,
                                        1.0f, 1.0f, 2.5f, 6.0f, 1.0f, 1.0f, 1.0f, 9.0f};
    for (const RopeCase& c : {RopeCase{8, 1, 1, 8}, RopeCase{32, 3, 5, 32}, RopeCase{32, 8, 17, 24},
                              RopeCase{64, 5, 5, 32}}) {
        for (RopeStyle style : {RopeStyle::Norm, RopeStyle::Neox}) {
            for (bool scaled : {false, true}) {
                RopeParams p;
                p.n_rot = c.n_rot;
                p.style = style;
                p.freq_base = scaled ? 500000.0f : 10000.0f;
                p.freq_scale = scaled ? 0.25f : 1.0f;
                p.freq_factors = scaled ? factors.data() : nullptr;
                std::vector<int32_t> pos(c.n_tokens);
                for (int64_t t = 0; t < c.n_tokens; ++t)
                    pos[t] = int32_t(3 + 17 * t);
                HostTensor x = test::random_f32({c.head_dim, c.n_heads, c.n_tokens});
                const HostTensor x0 = x;
                backend.rope(x.t, pos.data(), p);
                const auto ref = reference_rope(x0, pos.data(), p);
                EXPECT_LE(test::nmse(ref, x.f32(), ref.size()), kRopeNmse)
                    << (style == RopeStyle::Norm ? "norm " : "neox ") << c.head_dim << "/"
                    << c.n_rot << " heads " << c.n_heads << " tokens " << c.n_tokens;
                for (int64_t r = 0; r < c.n_heads * c.n_tokens; ++r) {
                    for (int64_t i = c.n_rot; i < c.head_dim; ++i) {
                        ASSERT_EQ(x0.f32()[r * c.head_dim + i], x.f32()[r * c.head_dim + i])
                            << "dim " << i << " >= n_rot must pass through";
                    }
                }
            }
        }
    }
}

TEST(CpuRope, NormAndNeoxDiffer) {
    CpuBackend backend(1);
    const int32_t pos[2] = {5, 40};
    HostTensor norm = test::random_f32({16, 2, 2});
    HostTensor neox = norm;
    RopeParams p;
    p.n_rot = 16;
    p.style = RopeStyle::Norm;
    backend.rope(norm.t, pos, p);
    p.style = RopeStyle::Neox;
    backend.rope(neox.t, pos, p);
    EXPECT_GT(test::nmse(norm.f32(), neox.f32(), norm.size()), 1e-2);
}

TEST(CpuRope, PositionZeroIsIdentity) {
    CpuBackend backend(2);
    for (RopeStyle style : {RopeStyle::Norm, RopeStyle::Neox}) {
        const std::vector<int32_t> pos(5, 0);
        HostTensor x = test::random_f32({64, 4, 5});
        const HostTensor x0 = x;
        RopeParams p;
        p.n_rot = 48;
        p.style = style;
        backend.rope(x.t, pos.data(), p);
        EXPECT_EQ(0, std::memcmp(x.f32(), x0.f32(), x.size() * sizeof(float)));
    }
}

// Hugging Face's YaRN (_compute_yarn_parameters) in double: per pair i, inv_freq mixes the
// interpolated base^(-2i/d)/factor and the extrapolated base^(-2i/d) by 1 - ramp(i), where
// ramp rises linearly from 0 at floor(d(beta_fast)) to 1 at ceil(d(beta_slow)).
std::vector<double> reference_yarn(const HostTensor& x, const int32_t* pos, int n_rot, double base,
                                   double factor, int orig_ctx) {
    const int64_t head_dim = x.t.ne[0], rows = x.t.ne[1] * x.t.ne[2], n_heads = x.t.ne[1];
    const double pi = 3.14159265358979323846;
    auto corr = [&](double rot) { return n_rot * std::log(orig_ctx / (rot * 2 * pi)) / (2 * std::log(base)); };
    double low = std::max(0.0, std::floor(corr(32))), high = std::min(n_rot - 1.0, std::ceil(corr(1)));
    if (low == high) high += 0.001;
    const double mscale = 0.1 * std::log(factor) + 1.0;
    std::vector<double> y(x.f32(), x.f32() + x.size());
    for (int64_t r = 0; r < rows; ++r) {
        double* v = y.data() + r * head_dim;
        for (int i = 0; i < n_rot / 2; ++i) {
            const double extrap = std::pow(base, -2.0 * i / n_rot);
            const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
            const double inv_freq = extrap / factor * ramp + extrap * (1.0 - ramp);
            const double theta = pos[r / n_heads] * inv_freq;
            const double x0 = v[i], x1 = v[i + n_rot / 2];  // NEOX (qwen2)
            v[i] = (x0 * std::cos(theta) - x1 * std::sin(theta)) * mscale;
            v[i + n_rot / 2] = (x0 * std::sin(theta) + x1 * std::cos(theta)) * mscale;
        }
    }
    return y;
}

TEST(CpuRope, YarnMatchesTheNtkByPartsFormula) {
    CpuBackend backend(2);
    for (const double factor : {4.0, 8.0}) {
        for (const int n_rot : {64, 128}) {
            RopeParams p;
            p.n_rot = n_rot;
            p.style = RopeStyle::Neox;
            p.freq_base = 1e6f;
            p.freq_scale = static_cast<float>(1.0 / factor);
            p.ext_factor = 1.0f;
            p.n_ctx_orig = 4096;
            // Positions past the original context, where YaRN differs from linear scaling.
            const std::vector<int32_t> pos = {0, 1, 100, 4095, 4096, 9000, 16383};
            HostTensor x = test::random_f32({n_rot, 3, static_cast<int64_t>(pos.size())});
            const HostTensor x0 = x;
            backend.rope(x.t, pos.data(), p);
            const auto ref = reference_yarn(x0, pos.data(), n_rot, 1e6, factor, 4096);
            // float angles at positions ~16k: |Δθ| ~ 1e-3 at the fastest pair
            EXPECT_LE(test::nmse(ref, x.f32(), ref.size()), 1e-6) << "factor " << factor << " n_rot " << n_rot;
            // Not plain linear scaling: the fast pairs keep their unscaled angle.
            HostTensor lin = x0;
            p.ext_factor = 0.0f;
            backend.rope(lin.t, pos.data(), p);
            EXPECT_GT(test::nmse(ref, lin.f32(), ref.size()), 1e-3);
        }
    }
}

TEST(CpuRope, RejectsBadYarnParams) {
    CpuBackend backend(1);
    const int32_t pos[1] = {1};
    HostTensor x = test::random_f32({16, 1, 1});
    RopeParams p;
    p.n_rot = 16;
    p.ext_factor = 1.0f;  // no original context
    EXPECT_THROW(backend.rope(x.t, pos, p), ArgumentError);
    p.n_ctx_orig = 64;
    p.beta_fast = 0.5f;  // below beta_slow
    EXPECT_THROW(backend.rope(x.t, pos, p), ArgumentError);
}

TEST(CpuRope, RejectsBadRotation) {
    CpuBackend backend(1);
    const int32_t pos[1] = {1};
    HostTensor x = test::random_f32({16, 1, 1});
    RopeParams p;
    for (int n_rot : {0, 7, 18}) {
        p.n_rot = n_rot;
        EXPECT_THROW(backend.rope(x.t, pos, p), ArgumentError) << n_rot;
    }
}

}  // namespace
}  // namespace strata::cpu
