// The fast activation quantizers against quant/'s reference: bit-identical blocks on random rows,
// on rounding ties (x·(1/d) exactly k + 1/2), on blocks whose largest |x| appears with both
// signs, and on all-zero and tiny blocks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels_cpu/quantize_act.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

class QuantizeAct : public ::testing::TestWithParam<GgmlType> {
  protected:
    void SetUp() override {
        if (fast_act_quantizer(GetParam()) == nullptr)
            GTEST_SKIP() << "no fast quantizer on this CPU";
    }

    // Quantizes `x` with both and expects the same bytes.
    void expect_identical(const std::vector<float>& x, const std::string& what) const {
        const GgmlType type = GetParam();
        const int64_t n = static_cast<int64_t>(x.size());
        const size_t bytes = row_bytes(type, n);
        std::vector<uint8_t> want(bytes, 0x5A), got(bytes, 0xA5);
        type_traits(type).quantize(x.data(), want.data(), n);
        fast_act_quantizer(type)(x.data(), got.data(), n);
        EXPECT_EQ(0, std::memcmp(want.data(), got.data(), bytes))
            << type_traits(type).name << " " << what;
    }
};

TEST_P(QuantizeAct, RandomRowsAreBitIdentical) {
    const int64_t block = type_traits(GetParam()).block_size;
    for (float scale : {0.05f, 1.0f, 37.0f, 3e4f}) {  // fill_uniform skips |x| < 1e-3
        std::vector<float> x(static_cast<size_t>(block * 9));
        test::fill_uniform(x.data(), static_cast<int64_t>(x.size()), -scale, scale);
        expect_identical(x, "uniform +-" + std::to_string(scale));
    }
}

TEST_P(QuantizeAct, RoundingTiesAndSignedMaxima) {
    const int64_t block = type_traits(GetParam()).block_size;
    // amax = 127 makes the scale exactly 1, so x = k + 1/2 are exact ties for both rounding
    // rules (half away from zero for Q8_0, half to even for Q8_K).
    std::vector<float> x(static_cast<size_t>(block * 3));
    for (size_t i = 0; i < x.size(); ++i)
        x[i] = static_cast<float>(static_cast<int>(i % 50) - 25) + 0.5f;
    for (int64_t b = 0; b < 3; ++b)
        x[static_cast<size_t>(b * block + 5)] = b == 1 ? -127.0f : 127.0f;
    expect_identical(x, "ties");
    // The largest |x| with both signs: the first one decides the sign of Q8_K's scale.
    for (size_t i = 0; i < x.size(); ++i)
        x[i] = static_cast<float>(i % 7) * 0.25f;
    x[3] = -2.0f;
    x[9] = 2.0f;
    x[static_cast<size_t>(block) + 1] = 2.0f;
    x[static_cast<size_t>(block) + 2] = -2.0f;
    expect_identical(x, "signed maxima");
}

TEST_P(QuantizeAct, ZeroAndTinyBlocks) {
    const int64_t block = type_traits(GetParam()).block_size;
    std::vector<float> x(static_cast<size_t>(block * 3), 0.0f);
    for (int64_t i = 0; i < block; ++i)
        x[static_cast<size_t>(block + i)] =
            1e-39f * static_cast<float>(i % 5 - 2);  // 1/d overflows
    for (int64_t i = 0; i < block; ++i)
        x[static_cast<size_t>(2 * block + i)] = test::uniform(-1.0f, 1.0f);
    expect_identical(x, "zero, subnormal and normal blocks");
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, QuantizeAct, ::testing::Values(GgmlType::Q8_0, GgmlType::Q8_K),
                         [](const auto& info) {
                             return std::string(type_traits(info.param).name);
                         });

}  // namespace
}  // namespace strata::cpu
