// The backend-ops table (backend_ops.h) on every CPU kernel variant this machine runs (scalar,
// AVX2, AVX-512 through kernel_variant.h) and on the fake device, one test per backend and
// operation family, each case against the scalar reference within its bound. CUDA runs the
// same table in tests/kernels_cuda/backend_ops_cuda_test.cpp. Also: the table's random weights
// are sane (finite, close to the floats they were quantized from).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <tuple>

#include "kernels_cpu/cpu_backend.h"
#include "backends/fake_device.h"
#include "tests/kernels_cpu/backend_ops.h"

namespace strata::backend_ops {
namespace {

using cpu::KernelVariant;

// The CPU backends: the variant forced for the whole test (the fake device's inner CpuBackend
// follows it too, on Auto: the best this CPU has).
struct CpuKind {
    const char* name;
    KernelVariant variant;
    bool fake_device;
};

const CpuKind kKinds[] = {
    {"cpu_scalar", KernelVariant::Scalar, false},
    {"cpu_avx2", KernelVariant::Avx2, false},
    {"cpu_avx512", KernelVariant::Avx512, false},
    {"fake_device", KernelVariant::Auto, true},
};

using Param = std::tuple<int, std::string>;  // kind index, family

class BackendOps : public ::testing::TestWithParam<Param> {};

TEST_P(BackendOps, MatchesTheScalarReference) {
    const auto& [kind_index, family] = GetParam();
    const CpuKind& kind = kKinds[kind_index];
    if (!cpu::kernel_variant_supported(kind.variant))
        GTEST_SKIP() << "this CPU lacks " << cpu::kernel_variant_name(kind.variant);
    std::unique_ptr<Backend> backend;
    if (kind.fake_device) {
        FakeDeviceOptions o;
        o.n_threads = 2;
        backend = std::make_unique<FakeDeviceBackend>(o);
    } else {
        backend = std::make_unique<cpu::CpuBackend>(2);
    }
    check_family(*backend, family, false, kind.variant);
}

INSTANTIATE_TEST_SUITE_P(Table, BackendOps,
                         ::testing::Combine(::testing::Range(0,
                                                             static_cast<int>(std::size(kKinds))),
                                            ::testing::ValuesIn(families())),
                         [](const auto& info) {
                             return std::string(kKinds[std::get<0>(info.param)].name) + "_" +
                                    std::get<1>(info.param);
                         });

// Σ(src − dequant(quant(src)))² / Σ src² for uniform [-1, 1] inputs, by bits per weight
// (measured with this test's seed): 8+ bits ~1e-5, q6_K 2e-4, the 5-bit types ~1e-3 (a uniform
// 5-bit grid alone gives 3·(2/32)²/12 ≈ 0.98e-3), 4 bits up to 5e-3, the 3-bit
// i-quants 0.01 .. 0.03, the 2-bit ones 0.05 .. 0.1, iq1 0.13, the ternary tq1_0 / tq2_0 0.25
// (made for ternary weights, not uniform ones). Each limit sits above its class with room and
// far below 1, what zeros or garbage blocks give.
double quantization_limit(GgmlType type) {
    const double bits =
        8.0 * static_cast<double>(type_traits(type).type_size) / type_traits(type).block_size;
    if (bits >= 8.0) return 1e-4;
    if (bits >= 6.5) return 1e-3;
    if (bits >= 5.5) return 2e-3;
    if (bits >= 4.0) return 1.5e-2;
    if (bits >= 3.0) return 0.1;
    return 0.4;
}

TEST(BackendOpsWeights, QuantizedFromRandomFloatsAndSane) {
    cpu::test::rng().seed(5);  // the same inputs whichever tests ran before
    for (GgmlType type : weight_types()) {
        const int64_t k = type_traits(type).block_size == 1 ? 65 : 2 * type_traits(type).block_size;
        std::vector<float> src;
        const HostTensor w = random_weights(type, k, 5, &src);
        const std::vector<float> dq = cpu::test::dequantized(w.t);
        double sum_sq = 0.0;
        for (float v : dq) {
            ASSERT_TRUE(std::isfinite(v)) << type_traits(type).name;
            sum_sq += double{v} * v;
        }
        EXPECT_GT(sum_sq / dq.size(), 1e-6) << type_traits(type).name << ": weights all near zero";
        if (src.empty()) continue;  // random blocks: no source floats (no quantizer)
        const double err = cpu::test::nmse(src, dq.data(), dq.size());
        EXPECT_LE(err, quantization_limit(type)) << type_traits(type).name;
        RecordProperty(type_name(type), cat(err));
    }
}

}  // namespace
}  // namespace strata::backend_ops
