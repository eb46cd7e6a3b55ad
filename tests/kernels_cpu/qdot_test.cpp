// Quantized dot-product kernels, called directly: every SIMD variant against the scalar integer
// kernels (same integer arithmetic, so they agree up to float summation order), the scalar
// kernels against the dequantized blocks in double, and each row's result independent of the
// group it was computed in. Variants the CPU lacks are skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels_cpu/act_lanes.h"
#include "kernels_cpu/cpu_features.h"
#include "kernels_cpu/qdot.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;

using test::kQuantTypes;

// One weight row and kQDotMaxCols activation rows quantized to the partner type, plus the
// dequantized values of both for double-precision references. `kernel` (default: the scalar
// one) picks the activation layout: SIMD kernels may read the partner's values in an order of
// their own (act_lanes.h), quantized by their own quantizer from the same f32 rows.
struct DotCase {
    HostTensor w;
    HostTensor xq;  // reference partner blocks, for the dequantized values
    std::vector<uint8_t> xk;  // the same rows as `kernel` quantizes them
    size_t xk_stride;
    std::vector<float> xd;  // expanded block scales ([kQDotMaxCols][n_blocks]) for Q8_0/Q8_1
    std::vector<float> w_deq;
    std::vector<float> x_deq;  // [kQDotMaxCols][k]
    int64_t k;
    int64_t n_blocks;

    DotCase(GgmlType type, int64_t blocks, const QDotKernel* kernel = nullptr)
        : w(test::random_weights(type, blocks * type_traits(type).block_size, 1)),
          xq(qdot_partner_type(type),
             {blocks * type_traits(type).block_size, kQDotMaxCols}),
          k(blocks * type_traits(type).block_size),
          n_blocks(blocks) {
        if (kernel == nullptr) kernel = find_qdot_kernel(type, KernelVariant::Scalar);
        const HostTensor x = test::random_f32({k, kQDotMaxCols}, -2.0f, 2.0f);
        const TypeTraits& act = type_traits(qdot_partner_type(type));
        xk_stride = act_row_bytes(*kernel, k);
        xk.assign(xk_stride * kQDotMaxCols, 0);
        xd.assign(static_cast<size_t>(kQDotMaxCols * blocks), 0.0f);
        for (int c = 0; c < kQDotMaxCols; ++c) {
            act.quantize(x.f32() + c * k, row_ptr(c), k);
            kernel->quantize(x.f32() + c * k, xk.data() + c * xk_stride, k);
            expand_act_scales(act.type, row_ptr(c), blocks, xd.data() + c * blocks);
        }
        w_deq = test::dequantized(w.t);
        x_deq = test::dequantized(xq.t);
    }

    uint8_t* row_ptr(int c) const {
        return static_cast<uint8_t*>(xq.t.data) + static_cast<size_t>(c) * xq.t.nb[1];
    }
    // Activation rows from row c on, as the kernel named at construction takes them.
    QDotActs acts(int c = 0) const {
        return QDotActs{xk.data(), xk_stride, xd.data(), static_cast<size_t>(n_blocks)}.from_row(c);
    }

    // Σ w·x_c and Σ |w·x_c| in double over the dequantized values.
    double exact(int c, double* magnitude) const {
        double s = 0.0, a = 0.0;
        for (int64_t e = 0; e < k; ++e) {
            const double t = static_cast<double>(w_deq[e]) * x_deq[static_cast<size_t>(c * k + e)];
            s += t;
            a += std::fabs(t);
        }
        *magnitude = a;
        return s;
    }
};

class QDotTypes : public ::testing::TestWithParam<GgmlType> {};

TEST_P(QDotTypes, ScalarKernelMatchesDequantizedBlocksInDouble) {
    const GgmlType type = GetParam();
    const QDotKernel* scalar = find_qdot_kernel(type, KernelVariant::Scalar);
    ASSERT_NE(scalar, nullptr);
    for (int64_t blocks : {1, 3, 7}) {
        const DotCase dc(type, blocks);
        float out[kQDotMaxCols];
        scalar->dot(dc.w.t.data, dc.acts(), dc.n_blocks, kQDotMaxCols, out);
        // Integer sums are exact; only the float scale products and the block sum round. Q4_1
        // and Q5_1 also meet Q8_1's s = f16(d·Σq), off by up to 2^-11 of m·s <= Σ|w·x|.
        const bool f16_sum = qdot_partner_type(type) == GgmlType::Q8_1;
        const double rel = f16_sum ? 5e-4 : 1e-5;
        for (int c = 0; c < kQDotMaxCols; ++c) {
            double magnitude = 0.0;
            const double ref = dc.exact(c, &magnitude);
            EXPECT_NEAR(out[c], ref, rel * magnitude)
                << type_traits(type).name << " blocks=" << blocks << " row " << c;
        }
    }
}

// A SIMD variant against the scalar integer kernel: bit-identical integer block sums, float
// accumulation in another order, so |simd - scalar| stays within (blocks + a few) float32
// roundings of Σ|w·x| (about 2e-6 of it at 17 blocks in the worst case; 1e-5 allowed).
void expect_matches_scalar(GgmlType type, KernelVariant variant) {
    const QDotKernel* scalar = find_qdot_kernel(type, KernelVariant::Scalar);
    const QDotKernel* simd = find_qdot_kernel(type, variant);
    if (simd == nullptr)
        GTEST_SKIP() << kernel_variant_name(variant) << " has no kernel for this type";
    ASSERT_EQ(simd->act_type, scalar->act_type);
    for (int64_t blocks : {1, 2, 5, 17}) {
        // The same weights and f32 activations, each kernel reading its own activation layout.
        const DotCase dc(type, blocks, simd);
        float want[kQDotMaxCols], got[kQDotMaxCols];
        const QDotActs scalar_acts{static_cast<const uint8_t*>(dc.xq.t.data), dc.xq.t.nb[1], dc.xd.data(),
                                   static_cast<size_t>(dc.n_blocks)};
        scalar->dot(dc.w.t.data, scalar_acts, dc.n_blocks, kQDotMaxCols, want);
        for (int n_cols = 1; n_cols <= kQDotMaxCols; ++n_cols) {
            for (int c0 = 0; c0 + n_cols <= kQDotMaxCols; c0 += n_cols) {
                simd->dot(dc.w.t.data, dc.acts(c0), dc.n_blocks, n_cols, got);
                for (int c = 0; c < n_cols; ++c) {
                    double magnitude = 0.0;
                    dc.exact(c0 + c, &magnitude);
                    EXPECT_NEAR(got[c], want[c0 + c], 1e-5 * magnitude)
                        << type_traits(type).name << " " << kernel_variant_name(variant)
                        << " blocks=" << blocks << " n_cols=" << n_cols << " row " << c0 + c;
                }
            }
        }
    }
}

TEST_P(QDotTypes, Avx2MatchesScalarKernel) {
    if (!kernel_variant_supported(KernelVariant::Avx2)) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
    expect_matches_scalar(GetParam(), KernelVariant::Avx2);
}

TEST_P(QDotTypes, Avx512MatchesScalarKernel) {
    if (!kernel_variant_supported(KernelVariant::Avx512)) GTEST_SKIP() << "CPU lacks AVX-512 VNNI";
    expect_matches_scalar(GetParam(), KernelVariant::Avx512);
}

// Row c's result is the same bits whether it is computed alone or in a group of up to 8.
TEST_P(QDotTypes, EachRowIndependentOfItsGroup) {
    const GgmlType type = GetParam();
    for (KernelVariant v : {KernelVariant::Scalar, KernelVariant::Avx2, KernelVariant::Avx512}) {
        if (!kernel_variant_supported(v)) continue;
        const QDotKernel* kernel = find_qdot_kernel(type, v);
        if (kernel == nullptr) continue;
        const DotCase dc(type, 5, kernel);
        float group[kQDotMaxCols];
        kernel->dot(dc.w.t.data, dc.acts(), dc.n_blocks, kQDotMaxCols, group);
        for (int c = 0; c < kQDotMaxCols; ++c) {
            float alone = 0.0f;
            kernel->dot(dc.w.t.data, dc.acts(c), dc.n_blocks, 1, &alone);
            EXPECT_EQ(0, std::memcmp(&alone, &group[c], sizeof(float)))
                << type_traits(type).name << " " << kernel_variant_name(v) << " row " << c
                << ": " << alone << " vs " << group[c];
        }
    }
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, QDotTypes, ::testing::ValuesIn(kQuantTypes),
                         [](const auto& info) {
                             return std::string(type_traits(info.param).name);
                         });

TEST(QDotTable, CoversTheTypesOfQ4KMFilesInEverySimdVariant) {
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q4_K,
                          GgmlType::Q5_K, GgmlType::Q6_K}) {
        for (KernelVariant v :
             {KernelVariant::Scalar, KernelVariant::Avx2, KernelVariant::Avx512}) {
#if defined(__x86_64__)
            EXPECT_NE(find_qdot_kernel(type, v), nullptr)
                << type_traits(type).name << " " << kernel_variant_name(v);
#endif
        }
    }
    EXPECT_EQ(find_qdot_kernel(GgmlType::F16, KernelVariant::Scalar), nullptr);
    EXPECT_EQ(find_qdot_kernel(GgmlType::Q4_K, KernelVariant::Dequant), nullptr);
    EXPECT_EQ(qdot_partner_type(GgmlType::Q5_0), GgmlType::Q8_0);
    EXPECT_EQ(qdot_partner_type(GgmlType::Q5_1), GgmlType::Q8_1);
    EXPECT_EQ(qdot_partner_type(GgmlType::IQ4_XS), GgmlType::Q8_K);
}

// With AVX-VNNI the AVX2 variant's Q4_K / Q5_K kernels are qdot_avxvnni_k.cpp's, on the AVX-512
// kernels' K4 layout (so the tests above run them there); without it, the maddubs kernels on
// plain Q8_K. Q6_K keeps its AVX2 kernel either way.
TEST(QDotTable, Avx2VariantTakesTheVnniKernelsWhereTheCpuHasAvxVnni) {
    if (!kernel_variant_supported(KernelVariant::Avx2)) GTEST_SKIP() << "CPU lacks avx2";
    const size_t lanes = sizeof(BlockQ8KLanes), plain = type_traits(GgmlType::Q8_K).type_size;
    for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K}) {
        const QDotKernel* k = find_qdot_kernel(type, KernelVariant::Avx2);
        ASSERT_NE(k, nullptr);
        EXPECT_EQ(k->act_block_bytes, cpu_features().avxvnni ? lanes : plain) << type_traits(type).name;
        EXPECT_EQ(k->dot == qdot_avxvnni_k(type), cpu_features().avxvnni) << type_traits(type).name;
    }
    EXPECT_EQ(find_qdot_kernel(GgmlType::Q6_K, KernelVariant::Avx2)->act_block_bytes, plain);
}

}  // namespace
}  // namespace strata::cpu
