// The oneDNN prefill path of matmul (dnnl_matmul.h) through CpuBackend: within its bf16
// bound of the exact product, equal to the product of the bf16-rounded inputs up to f32
// summation (which proves the path ran: the integer GEMM is ~1e-5 away from it), at odd sizes
// (k an odd number of blocks, n not a multiple of the tile or of 64, m = 512 and 517). Runs
// through oneDNN's AVX-512 kernels where the CPU lacks AMX (dnnl_require_amx = false); skipped
// where oneDNN is not built in or has no bf16 matmul on this CPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels_cpu/cpu_backend.h"
#include "kernels_cpu/cpu_features.h"
#include "kernels_cpu/dnnl_matmul.h"
#include "quant/half.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;

// bf16 keeps 8 significant bits: rounding a value uniform within its binade leaves a relative
// error of RMS 2^-8 / sqrt(6) (variance 2^-14 / 24 ≈ 2.5e-6); W and x are both rounded, so the
// NMSE is ≈ 5e-6 on random inputs (measured 4.3e-6 for every type and shape below). Bound 2.3x.
constexpr double kBf16NmseBound = 1e-5;
// Against the product of the bf16-rounded inputs only f32 summation differs (k <= 2304 here).
constexpr double kF32SumNmseBound = 1e-10;

float round_bf16(float v) {
    return bf16_to_fp32(fp32_to_bf16(v));
}

// y [n, m] = bf16(W) · bf16(x) in double.
std::vector<double> bf16_reference(const Tensor& w, const HostTensor& x) {
    std::vector<float> wf = test::dequantized(w);
    for (float& v : wf)
        v = round_bf16(v);
    const int64_t k = w.ne[0], n = w.ne[1], m = x.t.ne[1];
    std::vector<float> xf(x.f32(), x.f32() + k * m);
    for (float& v : xf)
        v = round_bf16(v);
    std::vector<double> y(static_cast<size_t>(n * m));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            double s = 0.0;
            for (int64_t e = 0; e < k; ++e)
                s += static_cast<double>(wf[j * k + e]) * static_cast<double>(xf[i * k + e]);
            y[i * n + j] = s;
        }
    }
    return y;
}

CpuBackendOptions dnnl_options(int64_t min_rows = 512) {
    CpuBackendOptions o;
    o.n_threads = 2;
    o.dnnl_min_rows = min_rows;
    o.dnnl_require_amx = false;  // this path also on AVX-512 without AMX: what is tested here
    return o;
}

#define SKIP_WITHOUT_DNNL()                                                                 \
    if (!dnnl_matmul_available())                                                           \
    GTEST_SKIP() << "oneDNN path not available (built without libdnnl-dev, STRATA_DNNL=0, " \
                    "or no bf16 matmul in oneDNN on this CPU: "                             \
                 << cpu_features().to_string() << ")"

struct Case {
    GgmlType type;
    int64_t k_blocks;  // k = k_blocks * block size: odd counts
    int64_t n;
    int64_t m;
};

TEST(DnnlMatmul, WithinBf16BoundAndEqualToTheBf16ProductAtOddSizes) {
    SKIP_WITHOUT_DNNL();
    if (!cpu_features().amx_bf16) {
        std::printf("[ note     ] no AMX-BF16 here (%s): testing oneDNN's AVX-512 bf16 path\n",
                    cpu_features().to_string().c_str());
    }
    CpuBackend backend(dnnl_options());
    const Case cases[] = {
        {GgmlType::Q4_K, 3, 1100, 517},  // m past 512
        {GgmlType::Q4_K, 9, 301, 512},   // k = 2304
        {GgmlType::Q4_0, 25, 301, 512}, {GgmlType::Q8_0, 25, 77, 517},
        {GgmlType::Q6_K, 3, 130, 512},
    };
    for (const Case& c : cases) {
        const int64_t k = c.k_blocks * type_traits(c.type).block_size;
        ASSERT_TRUE(use_dnnl_matmul(c.type, c.m, DnnlPolicy{512, false}));
        const HostTensor w = test::random_weights(c.type, k, c.n);
        const HostTensor x = test::random_f32({k, c.m});
        HostTensor y(GgmlType::F32, {c.n, c.m});
        backend.matmul(w.t, x.t, y.t);
        const size_t count = static_cast<size_t>(c.n * c.m);
        const double exact = test::nmse(test::reference_matmul(w.t, x), y.f32(), count);
        const double rounded = test::nmse(bf16_reference(w.t, x), y.f32(), count);
        EXPECT_LE(exact, kBf16NmseBound)
            << type_traits(c.type).name << " k=" << k << " n=" << c.n << " m=" << c.m;
        EXPECT_LE(rounded, kF32SumNmseBound)
            << type_traits(c.type).name << " k=" << k << " n=" << c.n << " m=" << c.m;
        std::printf("[ measured ] %s k=%lld n=%lld m=%lld: NMSE %.2e vs exact, %.2e vs bf16\n",
                    std::string(type_traits(c.type).name).c_str(), static_cast<long long>(k),
                    static_cast<long long>(c.n), static_cast<long long>(c.m), exact, rounded);
    }
}

TEST(DnnlMatmul, SeveralTilesWithAPartialLastOne) {
    SKIP_WITHOUT_DNNL();
    // The default tile holds all of any W this small; force 256 rows: 4 tiles + 76 rows.
    const int64_t k = 768, n = 1100, m = 517;
    const HostTensor w = test::random_weights(GgmlType::Q4_K, k, n);
    const HostTensor x = test::random_f32({k, m});
    HostTensor y(GgmlType::F32, {n, m});
    dnnl_matmul(w.t, x.t, y.t, 2, /*tile_rows=*/256);
    const size_t count = static_cast<size_t>(n * m);
    EXPECT_LE(test::nmse(bf16_reference(w.t, x), y.f32(), count), kF32SumNmseBound);
    EXPECT_LE(test::nmse(test::reference_matmul(w.t, x), y.f32(), count), kBf16NmseBound);
}

TEST(DnnlMatmul, StridedRowsOfXAndY) {
    SKIP_WITHOUT_DNNL();
    // x and y are views of every other row of bigger buffers, as in CpuMatmul's test.
    const int64_t k = 256, n = 93, m = 512;
    const HostTensor w = test::random_weights(GgmlType::Q8_0, k, n);
    HostTensor x_big = test::random_f32({k, 2 * m});
    HostTensor y_big(GgmlType::F32, {n, 2 * m});
    Tensor x = x_big.t, y = y_big.t;
    x.ne[1] = y.ne[1] = m;
    x.nb[1] *= 2;
    y.nb[1] *= 2;
    x.nb[2] = x.nb[3] = x.nb[1] * m;
    y.nb[2] = y.nb[3] = y.nb[1] * m;
    CpuBackend(dnnl_options()).matmul(w.t, x, y);
    HostTensor x_dense(GgmlType::F32, {k, m});
    for (int64_t i = 0; i < m; ++i)
        std::memcpy(x_dense.f32() + i * k, x_big.f32() + 2 * i * k, k * 4);
    const std::vector<double> ref = bf16_reference(w.t, x_dense);
    test::PooledNmse pooled;
    for (int64_t i = 0; i < m; ++i) {
        pooled.add(ref.data() + i * n, y_big.f32() + 2 * i * n, static_cast<size_t>(n));
        ASSERT_EQ(0xA5, y_big.bytes[(2 * i + 1) * n * 4]) << "odd rows must stay untouched";
    }
    EXPECT_LE(pooled.value(), kF32SumNmseBound);
}

TEST(DnnlMatmul, BelowTheThresholdTheIntegerGemmRunsBitForBit) {
    const int64_t k = 256, n = 70, m = 511;
    const HostTensor w = test::random_weights(GgmlType::Q4_K, k, n);
    const HostTensor x = test::random_f32({k, m});
    HostTensor y_dnnl(GgmlType::F32, {n, m}), y_ours(GgmlType::F32, {n, m});
    CpuBackend(dnnl_options(512)).matmul(w.t, x.t, y_dnnl.t);
    CpuBackend(dnnl_options(0)).matmul(w.t, x.t, y_ours.t);
    EXPECT_EQ(0, std::memcmp(y_dnnl.f32(), y_ours.f32(), n * m * sizeof(float)));
}

TEST(DnnlMatmul, PolicyKeepsExactTypesSmallBatchesAndNonAmxCpusOnOurKernels) {
    EXPECT_FALSE(use_dnnl_matmul(GgmlType::Q4_K, 4096, DnnlPolicy{0, false})) << "0 disables";
    EXPECT_FALSE(use_dnnl_matmul(GgmlType::Q4_K, 511, DnnlPolicy{512, false}));
    for (GgmlType exact : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
        EXPECT_FALSE(use_dnnl_matmul(exact, 4096, DnnlPolicy{512, false})) << type_traits(exact).name;
    }
    if (!cpu_features().amx_bf16) {
        EXPECT_FALSE(use_dnnl_matmul(GgmlType::Q4_K, 4096, DnnlPolicy{512, true}));
    }
    EXPECT_EQ(use_dnnl_matmul(GgmlType::Q4_K, 512, DnnlPolicy{512, false}),
              dnnl_matmul_available());
    EXPECT_EQ(CpuBackend(2).dnnl_min_rows(), 128) << "default from the measured crossover (AMX)";
}

}  // namespace
}  // namespace strata::cpu
