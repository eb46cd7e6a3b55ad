// matmul and get_rows of the CPU backend against a double-precision reference over the same
// dequantized weights, for every weight type quant/ can dequantize, at odd sizes: the f32
// dequantize path to 1e-10 (it is the backend-ops table's reference: backend_ops_test.cpp holds
// every variant and the fake device to it, within each type's bound); qmatmul_test.cpp compares
// each integer kernel variant with the scalar one.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;

const GgmlType kWeightTypes[] = {
    GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,   GgmlType::Q4_1,
    GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K,   GgmlType::Q3_K,
    GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS,
    GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
    GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::TQ1_0, GgmlType::TQ2_0,
};

// An odd number of blocks (or 33 elements for plain types).
int64_t odd_k(GgmlType type) {
    const int64_t block = type_traits(type).block_size;
    return block == 1 ? 33 : block * 3;
}

class MatmulTypes : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MatmulTypes, DequantPathMatchesDoubleReferenceAtOddSizes) {
    const GgmlType type = GetParam();
    const test::ScopedKernelVariant f32_path(KernelVariant::Dequant);
    CpuBackend backend(2);
    for (int64_t k : {odd_k(type), odd_k(type) * 3 + type_traits(type).block_size}) {
        for (int64_t n : {3, 7, 33}) {
            const HostTensor w = test::random_weights(type, k, n);
            for (int64_t m : {1, 5, 17}) {
                const HostTensor x = test::random_f32({k, m});
                HostTensor y(GgmlType::F32, {n, m});
                backend.matmul(w.t, x.t, y.t);
                const std::vector<double> ref = test::reference_matmul(w.t, x);
                EXPECT_LE(test::nmse(ref, y.f32(), ref.size()), 1e-10)
                    << type_traits(type).name << " k=" << k << " n=" << n << " m=" << m;
            }
        }
    }
}

TEST_P(MatmulTypes, GetRowsDequantizesTheSelectedRows) {
    const GgmlType type = GetParam();
    CpuBackend backend(2);
    const int64_t ne0 = odd_k(type), n_rows = 7;
    const HostTensor table = test::random_weights(type, ne0, n_rows);
    const std::vector<float> ref = test::dequantized(table.t);
    const std::vector<int32_t> ids = {6, 0, 3, 3, 5};
    HostTensor out(GgmlType::F32, {ne0, static_cast<int64_t>(ids.size())});
    backend.get_rows(table.t, ids.data(), static_cast<int64_t>(ids.size()), out.t);
    for (size_t i = 0; i < ids.size(); ++i) {
        EXPECT_EQ(0, std::memcmp(out.f32() + i * ne0, ref.data() + ids[i] * ne0, ne0 * 4))
            << type_traits(type).name << " row " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(CpuBackend, MatmulTypes, ::testing::ValuesIn(kWeightTypes),
                         [](const auto& info) {
                             return std::string(type_traits(info.param).name);
                         });

TEST(CpuMatmul, OneAndTwoThreadsAreBitIdentical) {
    for (GgmlType type : {GgmlType::F32, GgmlType::Q4_K, GgmlType::Q8_0}) {
        const int64_t k = 512, n = 301, m = 5;  // big enough to run multi-threaded
        const HostTensor w = test::random_weights(type, k, n);
        const HostTensor x = test::random_f32({k, m});
        HostTensor y1(GgmlType::F32, {n, m}), y2(GgmlType::F32, {n, m});
        CpuBackend one(1), two(2);
        one.matmul(w.t, x.t, y1.t);
        two.matmul(w.t, x.t, y2.t);
        EXPECT_EQ(0, std::memcmp(y1.f32(), y2.f32(), n * m * sizeof(float)))
            << type_traits(type).name;
        const std::vector<double> ref = test::reference_matmul(w.t, x);
        EXPECT_LE(test::nmse(ref, y2.f32(), ref.size()),
                  test::matmul_nmse_bound(type, active_kernel_variant()))
            << type_traits(type).name;
    }
}

TEST(CpuMatmul, StridedRowsOfXAndY) {
    // x and y are views of every other row of bigger buffers (a fused projection's output).
    const int64_t k = 64, n = 9, m = 5;
    const HostTensor w = test::random_weights(GgmlType::Q8_0, k, n);
    HostTensor x_big = test::random_f32({k, 2 * m});
    HostTensor y_big(GgmlType::F32, {n, 2 * m});
    Tensor x = x_big.t, y = y_big.t;
    x.ne[1] = y.ne[1] = m;
    x.nb[1] *= 2;
    y.nb[1] *= 2;
    x.nb[2] = x.nb[3] = x.nb[1] * m;
    y.nb[2] = y.nb[3] = y.nb[1] * m;
    CpuBackend(2).matmul(w.t, x, y);
    HostTensor x_dense(GgmlType::F32, {k, m});
    for (int64_t i = 0; i < m; ++i)
        std::memcpy(x_dense.f32() + i * k, x_big.f32() + 2 * i * k, k * 4);
    const std::vector<double> ref = test::reference_matmul(w.t, x_dense);
    test::PooledNmse pooled;
    for (int64_t i = 0; i < m; ++i) {
        pooled.add(ref.data() + i * n, y_big.f32() + 2 * i * n, static_cast<size_t>(n));
        EXPECT_EQ(0xA5, y_big.bytes[(2 * i + 1) * n * 4]) << "odd rows must stay untouched";
    }
    EXPECT_LE(pooled.value(), test::matmul_nmse_bound(GgmlType::Q8_0, active_kernel_variant()));
}

TEST(CpuMatmul, RejectsMismatchedShapesAndUnsupportedTypes) {
    CpuBackend backend(1);
    const HostTensor w = test::random_weights(GgmlType::F32, 32, 4);
    const HostTensor x = test::random_f32({33, 2});
    HostTensor y(GgmlType::F32, {4, 2});
    EXPECT_THROW(backend.matmul(w.t, x.t, y.t), ArgumentError);

    const TypeTraits* unsupported = nullptr;
    for (uint32_t id = 0; id < 64 && unsupported == nullptr; ++id) {
        const TypeTraits* t = find_type_traits(id);
        if (t != nullptr && t->dequantize == nullptr && t->block_size <= 256) unsupported = t;
    }
    if (unsupported == nullptr) GTEST_SKIP() << "quant/ dequantizes every type";
    HostTensor wq(unsupported->type, {256, 4});
    const HostTensor xq = test::random_f32({256, 2});
    try {
        backend.matmul(wq.t, xq.t, y.t);
        FAIL() << "matmul accepted " << unsupported->name;
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find(unsupported->name), std::string::npos) << e.what();
    }
}

TEST(CpuGetRows, BadIdThrowsWithTheIdAndRowCount) {
    CpuBackend backend(1);
    const HostTensor table = test::random_weights(GgmlType::Q4_0, 64, 7);
    HostTensor out(GgmlType::F32, {64, 2});
    for (int32_t bad : {7, -1}) {
        const int32_t ids[2] = {1, bad};
        try {
            backend.get_rows(table.t, ids, 2, out.t);
            FAIL() << "get_rows accepted id " << bad;
        } catch (const ArgumentError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("id " + std::to_string(bad)), std::string::npos) << what;
            EXPECT_NE(what.find("7 rows"), std::string::npos) << what;
        }
    }
}

}  // namespace
}  // namespace strata::cpu
