// The per-row kernels of every variant (row_ops.h) called directly: the vectorised exp/tanh
// behind softcap, SiLU and GELU against double at their documented error bounds, every SIMD
// row kernel against the scalar table, the row conversions bit-identical to quant/'s reference,
// and tails (n % W) giving the same bits as the vector body.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels_cpu/row_ops.h"
#include "quant/half.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

// simd_math.h's bounds: tanh 3e-7 relative, SiLU 4e-7, GELU-tanh 4e-7·(1 + |2u|) (its float
// argument's rounding, amplified by exp). A few ulps each.
constexpr double kTanhRel = 3e-7;
constexpr double kActRel = 4e-7;

class RowOpsVariants : public ::testing::TestWithParam<KernelVariant> {
  protected:
    void SetUp() override {
        if (!kernel_variant_supported(GetParam())) GTEST_SKIP() << "CPU lacks this variant";
        ops_ = find_row_ops(GetParam());
        ASSERT_NE(ops_, nullptr);
    }
    const RowOps* ops_ = nullptr;
};

// Inputs on a dense grid over [lo, hi] plus tiny magnitudes (the cancellation-prone region).
std::vector<float> sweep(float lo, float hi, int n) {
    std::vector<float> x;
    for (int i = 0; i < n; ++i)
        x.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1));
    for (float t = 1e-30f; t < 1.0f; t *= 3.7f) {
        x.push_back(t);
        x.push_back(-t);
    }
    x.push_back(0.0f);
    return x;
}

std::string sci(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3g", v);
    return buf;
}

double rel_err(double ref, float got) {
    if (ref == 0.0) return std::fabs(got);
    return std::fabs(got - ref) / std::fabs(ref);
}

TEST_P(RowOpsVariants, TanhViaSoftcapWithinBound) {
    std::vector<float> x = sweep(-20.0f, 20.0f, 200001);
    const std::vector<float> x0 = x;
    ops_->softcap(x.data(), 1.0f, static_cast<int64_t>(x.size()));
    double worst = 0.0;
    for (size_t i = 0; i < x.size(); ++i)
        worst = std::max(worst, rel_err(std::tanh(static_cast<double>(x0[i])), x[i]));
    RecordProperty("max_rel_err", sci(worst));
    EXPECT_LE(worst, kTanhRel);
}

TEST_P(RowOpsVariants, SiluAndGeluWithinBound) {
    const std::vector<float> g = sweep(-80.0f, 80.0f, 200001);
    const std::vector<float> u(g.size(), 1.0f);
    std::vector<float> y(g.size());
    const int64_t n = static_cast<int64_t>(g.size());
    ops_->silu_mul(g.data(), u.data(), y.data(), n);
    double worst = 0.0;
    for (size_t i = 0; i < g.size(); ++i) {
        const double x = g[i];
        worst = std::max(worst, rel_err(x / (1.0 + std::exp(-x)), y[i]));
    }
    RecordProperty("silu_max_rel_err", sci(worst));
    EXPECT_LE(worst, kActRel) << "silu";
    ops_->gelu_tanh_mul(g.data(), u.data(), y.data(), n);
    worst = 0.0;
    for (size_t i = 0; i < g.size(); ++i) {
        const double x = g[i];
        // 0.5·x·(1 + tanh u) as x·sigmoid(2u): in double too, 1 + tanh u cancels below x ≈ -9.
        const double two_u = 2.0 * 0.7978845608028654 * x * (1.0 + 0.044715 * x * x);
        const double ref = x / (1.0 + std::exp(-two_u));
        // Below x ≈ -10 the value leaves the normal floats (and exp's clamp at e^88 shows).
        if (std::fabs(ref) < 1e-37) continue;
        // 2u is computed in float (3 roundings) and e^{-2u} turns its relative error δ into
        // |2u|·δ: the bound scales with 1 + |2u| (e.g. 2.6e-5 at x = -9, 2u ≈ -66).
        worst = std::max(worst, rel_err(ref, y[i]) / (1.0 + std::fabs(two_u)));
    }
    RecordProperty("gelu_max_scaled_rel_err", sci(worst));
    // The scalar table computes 0.5·x·(1 + tanh u) in float, which cancels where tanh u → −1.
    if (GetParam() != KernelVariant::Scalar) {
        EXPECT_LE(worst, kActRel) << "gelu_tanh";
    }
}

// Every size from 1 to 70 and a long odd one: the tail must give the vector body's bits.
const int64_t kSizes[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 47, 64, 65, 70, 8197};

TEST_P(RowOpsVariants, ElementwiseMatchScalarTable) {
    const RowOps& ref = row_ops_scalar();
    for (int64_t n : kSizes) {
        std::vector<float> a(n), b(n), y(n), r(n);
        test::fill_uniform(a.data(), n, -6.0f, 6.0f);
        test::fill_uniform(b.data(), n, -2.0f, 2.0f);
        ops_->add(a.data(), b.data(), y.data(), n);
        ref.add(a.data(), b.data(), r.data(), n);
        EXPECT_EQ(0, std::memcmp(y.data(), r.data(), n * sizeof(float))) << "add " << n;
        y = a;
        r = a;
        ops_->scale(y.data(), 0.37f, n);
        ref.scale(r.data(), 0.37f, n);
        EXPECT_EQ(0, std::memcmp(y.data(), r.data(), n * sizeof(float))) << "scale " << n;
        ops_->scale_mul(a.data(), b.data(), 0.71f, y.data(), n);
        ref.scale_mul(a.data(), b.data(), 0.71f, r.data(), n);
        EXPECT_EQ(0, std::memcmp(y.data(), r.data(), n * sizeof(float))) << "scale_mul " << n;
        const double ss = ops_->sum_squares(a.data(), n), ss_ref = ref.sum_squares(a.data(), n);
        EXPECT_NEAR(ss, ss_ref, 1e-7 * ss_ref) << "sum_squares " << n;  // float vs double x²
        ops_->silu_mul(a.data(), b.data(), y.data(), n);
        ref.silu_mul(a.data(), b.data(), r.data(), n);
        for (int64_t i = 0; i < n; ++i)
            ASSERT_NEAR(y[i], r[i], kActRel * 4 * std::fabs(r[i]) + 1e-30) << "silu " << n;
        // Tail elements equal the same value computed in a full vector.
        std::vector<float> one(1);
        for (int64_t i = 0; i < n; i += 7) {
            ops_->silu_mul(a.data() + i, b.data() + i, one.data(), 1);
            ASSERT_EQ(one[0], y[i]) << "silu element " << i << " of " << n;
        }
    }
}

TEST_P(RowOpsVariants, RopeMatchesScalarTable) {
    const RowOps& ref = row_ops_scalar();
    for (int64_t half : {1, 3, 8, 13, 32, 40, 64}) {
        std::vector<float> c(half), s(half);
        for (int64_t i = 0; i < half; ++i) {
            c[i] = std::cos(0.3f * static_cast<float>(i) + 0.1f);
            s[i] = std::sin(0.3f * static_cast<float>(i) + 0.1f);
        }
        for (bool neox : {false, true}) {
            std::vector<float> x(2 * half);
            test::fill_uniform(x.data(), 2 * half);
            std::vector<float> r = x;
            (neox ? ops_->rope_neox : ops_->rope_norm)(x.data(), c.data(), s.data(), half);
            (neox ? ref.rope_neox : ref.rope_norm)(r.data(), c.data(), s.data(), half);
            for (int64_t i = 0; i < 2 * half; ++i)  // one fused multiply-add: <= 2 ulp apart
                ASSERT_NEAR(x[i], r[i], 3e-7f) << (neox ? "neox " : "norm ") << half << " " << i;
        }
    }
}

TEST_P(RowOpsVariants, RowConversionsMatchTheReference) {
    for (GgmlType type : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
        const TypeTraits& traits = type_traits(type);
        for (int64_t n : {32, 96, 160, 4096 + 32}) {
            std::vector<float> x(n);
            test::fill_uniform(x.data(), n, -70000.0f, 70000.0f);  // f16 overflow, subnormals
            for (int64_t i = 0; i < n; i += 5)
                x[i] *= 1e-9f;
            const size_t bytes = static_cast<size_t>(n / traits.block_size) * traits.type_size;
            std::vector<uint8_t> q(bytes), q_ref(bytes);
            traits.quantize(x.data(), q_ref.data(), n);
            const QuantizeFn quantize = ops_->find_quantize(type);
            if (quantize != nullptr) {
                quantize(x.data(), q.data(), n);
                EXPECT_EQ(0, std::memcmp(q.data(), q_ref.data(), bytes)) << traits.name << " " << n;
            }
            std::vector<float> d(n), d_ref(n);
            traits.dequantize(q_ref.data(), d_ref.data(), n);
            const DequantizeFn dequantize = ops_->find_dequantize(type);
            if (dequantize != nullptr) {
                dequantize(q_ref.data(), d.data(), n);
                EXPECT_EQ(0, std::memcmp(d.data(), d_ref.data(), n * sizeof(float)))
                    << traits.name << " " << n;
            }
        }
    }
    // f16 at odd lengths (its tail).
    for (int64_t n : {1, 7, 17, 33}) {
        std::vector<float> x(n);
        test::fill_uniform(x.data(), n, -3.0f, 3.0f);
        std::vector<uint16_t> h(n), h_ref(n);
        for (int64_t i = 0; i < n; ++i)
            h_ref[i] = fp32_to_fp16(x[i]);
        if (QuantizeFn f = ops_->find_quantize(GgmlType::F16)) {
            f(x.data(), h.data(), n);
            EXPECT_EQ(h, h_ref) << n;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(CpuRowOps, RowOpsVariants,
                         ::testing::Values(KernelVariant::Scalar, KernelVariant::Avx2,
                                           KernelVariant::Avx512),
                         [](const auto& info) {
                             return std::string(kernel_variant_name(info.param));
                         });

}  // namespace
}  // namespace strata::cpu
