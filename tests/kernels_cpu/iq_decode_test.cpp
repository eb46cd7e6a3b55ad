// The i-quant / ternary block decoding (kernels_cpu/iq_decode.h): gather + scalar finish, dw·sc·q
// against quant/'s reference dequantization of random blocks, and the AVX2 finish byte for
// byte against the scalar one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels_cpu/iq_decode.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

const GgmlType kTypes[] = {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
                           GgmlType::IQ3_XXS, GgmlType::IQ3_S,  GgmlType::IQ1_S,
                           GgmlType::IQ1_M,   GgmlType::TQ1_0,  GgmlType::TQ2_0};

class IqDecode : public ::testing::TestWithParam<GgmlType> {};

TEST_P(IqDecode, ScaledBytesEqualTheReferenceValues) {
    const GgmlType type = GetParam();
    const IqGatherFn gather = find_iq_gather(type);
    ASSERT_NE(gather, nullptr);
    const test::HostTensor w = test::random_weights(type, 256 * 7, 3);
    const std::vector<float> ref = test::dequantized(w.t);
    const size_t bytes = type_traits(type).type_size;
    for (size_t b = 0; b < ref.size() / 256; ++b) {
        IqGathered g;
        IqDecoded dec;
        gather(static_cast<const uint8_t*>(w.t.data) + b * bytes, g);
        iq_finish_scalar(g, dec);
        for (int e = 0; e < 256; ++e) {
            const double got = static_cast<double>(dec.dw) * dec.sc[e / 16] * dec.q[e];
            const double want = ref[b * 256 + static_cast<size_t>(e)];
            // The reference rounds d·scale to float once: a relative 2^-23 apart at most.
            ASSERT_NEAR(got, want, 2.5e-7 * std::fabs(want)) << type_traits(type).name << " block " << b << " element " << e;
        }
    }
}

TEST_P(IqDecode, Avx2FinishGivesTheSameBytes) {
    const GgmlType type = GetParam();
    if (!kernel_variant_supported(KernelVariant::Avx2)) GTEST_SKIP() << "CPU lacks AVX2";
    const IqFinishFn fast = iq_finish_avx2();
    ASSERT_NE(fast, nullptr);
    const test::HostTensor w = test::random_weights(type, 256 * 9, 2);
    const size_t bytes = type_traits(type).type_size;
    for (size_t b = 0; b < 18; ++b) {
        const uint8_t* blk = static_cast<const uint8_t*>(w.t.data) + b * bytes;
        IqGathered g;
        find_iq_gather(type)(blk, g);
        IqDecoded want, got;
        std::memset(&got, 0x5A, sizeof(got));
        iq_finish_scalar(g, want);
        fast(g, got);
        ASSERT_EQ(0, std::memcmp(want.q, got.q, sizeof(want.q))) << type_traits(type).name << " block " << b;
        ASSERT_EQ(0, std::memcmp(want.sc, got.sc, sizeof(want.sc))) << type_traits(type).name << " block " << b;
        ASSERT_EQ(0, std::memcmp(&want.dw, &got.dw, sizeof(float))) << type_traits(type).name << " block " << b;
    }
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, IqDecode, ::testing::ValuesIn(kTypes),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

}  // namespace
}  // namespace strata::cpu
