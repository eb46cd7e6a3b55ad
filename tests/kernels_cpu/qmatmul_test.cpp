// matmul through the integer kernels with each variant forced (skipped where the CPU lacks it):
// against the f32 reference within the activation-quantization bound, against the scalar
// integer variant within float-summation-order error, and bit-identical for any thread count
// and any number of activation rows. Odd sizes: rows not divisible by threads or tiles.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;
using test::ScopedKernelVariant;

using test::kQuantTypes;
const KernelVariant kIntegerVariants[] = {KernelVariant::Scalar, KernelVariant::Avx2,
                                          KernelVariant::Avx512};

HostTensor run_matmul(const HostTensor& w, const HostTensor& x, int n_threads) {
    HostTensor y(GgmlType::F32, {w.t.ne[1], x.t.ne[1]});
    CpuBackend(n_threads).matmul(w.t, x.t, y.t);
    return y;
}

using Param = std::tuple<GgmlType, KernelVariant>;

class QMatmul : public ::testing::TestWithParam<Param> {
  protected:
    void SetUp() override {
        const auto [type, variant] = GetParam();
        if (!kernel_variant_supported(variant))
            GTEST_SKIP() << "CPU lacks " << kernel_variant_name(variant);
        if (find_qdot_kernel(type, variant) == nullptr)
            GTEST_SKIP() << kernel_variant_name(variant) << " keeps the f32 path for this type";
    }
};

TEST_P(QMatmul, WithinActivationQuantizationErrorOfF32Reference) {
    const auto [type, variant] = GetParam();
    const int64_t block = type_traits(type).block_size;
    test::PooledNmse pooled;
    for (int64_t k : {3 * block, block == 32 ? 37 * block : 5 * block}) {
        for (int64_t n : {1, 7, 67}) {
            const HostTensor w = test::random_weights(type, k, n);
            for (int64_t m : {1, 3, 17}) {
                const HostTensor x = test::random_f32({k, m});
                auto with_variant = [&](KernelVariant v) {
                    const ScopedKernelVariant forced(v);
                    return run_matmul(w, x, 3);
                };
                const HostTensor y = with_variant(variant);
                const HostTensor y_scalar = with_variant(KernelVariant::Scalar);
                std::vector<double> magnitude;
                const std::vector<double> ref = test::reference_matmul(w.t, x, &magnitude);
                pooled.add(ref, y.f32(), ref.size());
                // Same integer sums as the scalar kernels; only the float summation order
                // differs, so every output agrees to a few roundings of its Σ|w·x|.
                for (size_t i = 0; i < ref.size(); ++i) {
                    ASSERT_NEAR(y.f32()[i], y_scalar.f32()[i], 1e-5 * magnitude[i])
                        << type_traits(type).name << " " << kernel_variant_name(variant)
                        << " k=" << k << " n=" << n << " m=" << m << " output " << i;
                }
            }
        }
    }
    EXPECT_LE(pooled.value(), test::matmul_nmse_bound(type, variant))
        << type_traits(type).name << " " << kernel_variant_name(variant);
    RecordProperty("nmse", std::to_string(pooled.value()));
}

TEST_P(QMatmul, BitIdenticalForAnyThreadCountAndRowCount) {
    const auto [type, variant] = GetParam();
    const ScopedKernelVariant forced(variant);
    const int64_t k = 4 * 256, n = 301, m = 19;  // big enough to run on every thread
    const HostTensor w = test::random_weights(type, k, n);
    const HostTensor x = test::random_f32({k, m});
    const HostTensor y1 = run_matmul(w, x, 1);
    const HostTensor y3 = run_matmul(w, x, 3);
    EXPECT_EQ(0, std::memcmp(y1.f32(), y3.f32(), n * m * sizeof(float)))
        << type_traits(type).name << " " << kernel_variant_name(variant) << ": 1 vs 3 threads";
    for (int64_t i : {0, 8, 18}) {  // first, inside a group of 8, the ragged last group
        HostTensor xi(GgmlType::F32, {k, 1});
        std::memcpy(xi.f32(), x.f32() + i * k, k * sizeof(float));
        const HostTensor yi = run_matmul(w, xi, 2);
        EXPECT_EQ(0, std::memcmp(yi.f32(), y3.f32() + i * n, n * sizeof(float)))
            << type_traits(type).name << " " << kernel_variant_name(variant) << ": row " << i
            << " alone (decode) vs in a batch of " << m << " (prefill)";
    }
}

TEST_P(QMatmul, ColumnSlicesAddUpToTheWholeProduct) {
    // The split FFN multiplies column ranges of ffn_down (strided rows) and adds the parts.
    const auto [type, variant] = GetParam();
    const ScopedKernelVariant forced(variant);
    const int64_t block = type_traits(type).block_size;
    const int64_t k = (block == 32 ? 24 : 3) * 256, n = 37, cut = k / 3 / block * block;
    const HostTensor w = test::random_weights(type, k, n);
    for (int64_t m : {1, 5}) {
        const HostTensor x = test::random_f32({k, m});
        const HostTensor whole = run_matmul(w, x, 2);
        HostTensor xa(GgmlType::F32, {cut, m}), xb(GgmlType::F32, {k - cut, m});
        for (int64_t j = 0; j < m; ++j) {
            std::memcpy(xa.f32() + j * cut, x.f32() + j * k, cut * sizeof(float));
            std::memcpy(xb.f32() + j * (k - cut), x.f32() + j * k + cut, (k - cut) * sizeof(float));
        }
        HostTensor ya(GgmlType::F32, {n, m}), yb(GgmlType::F32, {n, m});
        CpuBackend(2).matmul(w.t.columns(0, cut), xa.t, ya.t);
        CpuBackend(2).matmul(w.t.columns(cut, k - cut), xb.t, yb.t);
        for (int64_t i = 0; i < n * m; ++i) {
            const double sum = static_cast<double>(ya.f32()[i]) + yb.f32()[i];
            EXPECT_NEAR(sum, whole.f32()[i], 1e-4 * (1.0 + std::abs(whole.f32()[i])))
                << type_traits(type).name << " " << kernel_variant_name(variant) << " m=" << m << " i=" << i;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, QMatmul,
                         ::testing::Combine(::testing::ValuesIn(kQuantTypes),
                                            ::testing::ValuesIn(kIntegerVariants)),
                         [](const auto& info) {
                             return std::string(type_traits(std::get<0>(info.param)).name) + "_" +
                                    std::string(kernel_variant_name(std::get<1>(info.param)));
                         });

TEST(KernelVariantSelection, AutoPicksTheBestSupportedAndForcingWorks) {
    const KernelVariant best =
        kernel_variant_supported(KernelVariant::Avx512) ? KernelVariant::Avx512
        : kernel_variant_supported(KernelVariant::Avx2) ? KernelVariant::Avx2
                                                        : KernelVariant::Scalar;
    set_kernel_variant(KernelVariant::Auto);
    EXPECT_EQ(active_kernel_variant(), best);
    {
        const ScopedKernelVariant forced(KernelVariant::Scalar);
        EXPECT_EQ(active_kernel_variant(), KernelVariant::Scalar);
    }
    EXPECT_EQ(active_kernel_variant(), best);
    EXPECT_EQ(kernel_variant_name(KernelVariant::Avx512), "avx512");
    EXPECT_TRUE(kernel_variant_supported(KernelVariant::Dequant));
}

TEST(KernelVariantSelection, ForcingAnUnsupportedVariantNamesTheMissingFeature) {
    for (KernelVariant v : {KernelVariant::Avx2, KernelVariant::Avx512}) {
        if (kernel_variant_supported(v)) continue;
        try {
            set_kernel_variant(v);
            FAIL() << "accepted " << kernel_variant_name(v);
        } catch (const UnsupportedError& e) {
            EXPECT_NE(std::string(e.what()).find("needs CPU features"), std::string::npos)
                << e.what();
        }
        return;
    }
    GTEST_SKIP() << "this CPU supports every variant";
}

TEST(KernelVariantSelection, BackendOptionKeepsActivationsInF32) {
    const int64_t k = 512, n = 37, m = 3;
    const HostTensor w = test::random_weights(GgmlType::Q4_K, k, n);
    const HostTensor x = test::random_f32({k, m});
    HostTensor y_f32(GgmlType::F32, {n, m}), y_q8(GgmlType::F32, {n, m});
    CpuBackendOptions options;
    options.n_threads = 2;
    options.quantize_activations = false;
    CpuBackend f32_backend(options);
    EXPECT_FALSE(f32_backend.quantize_activations());
    f32_backend.matmul(w.t, x.t, y_f32.t);
    CpuBackend(2).matmul(w.t, x.t, y_q8.t);
    const std::vector<double> ref = test::reference_matmul(w.t, x);
    EXPECT_LE(test::nmse(ref, y_f32.f32(), ref.size()), 1e-10);
    const double q8 = test::nmse(ref, y_q8.f32(), ref.size());
    EXPECT_GT(q8, 1e-8) << "the default backend should have quantized x";
    EXPECT_LE(q8, 1e-4);
}

TEST(KernelVariantSelection, DequantSendsEveryTypeToTheF32Path) {
    const ScopedKernelVariant forced(KernelVariant::Dequant);
    const int64_t k = 512, n = 37, m = 3;
    const HostTensor w = test::random_weights(GgmlType::Q4_K, k, n);
    const HostTensor x = test::random_f32({k, m});
    const HostTensor y = run_matmul(w, x, 2);
    const std::vector<double> ref = test::reference_matmul(w.t, x);
    EXPECT_LE(test::nmse(ref, y.f32(), ref.size()), 1e-10);  // no activation quantization
}

}  // namespace
}  // namespace strata::cpu
