// The fast activation quantizers against quant/'s reference: bit-identical blocks on random rows,
// on rounding ties (x·(1/d) exactly k + 1/2), on blocks whose largest |x| appears with both
// signs, and on all-zero and tiny blocks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels_cpu/act_lanes.h"
#include "kernels_cpu/quantize_act.h"
#include "quant/blocks.h"
#include "quant/half.h"
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


// The AVX-512 K-quant kernels' activation layouts (act_lanes.h) against quant/'s quantize_q8_k:
// the same d and quants, moved to the documented places, and the documented sums. The element
// of each byte is written out here from the weight formats' sub-blocks, not taken from
// lane_element: K4 lanes 2j and 2j+1 cover sub-block j (32 elements), each 16 of them; K6 lane
// L covers one 16-element sub-block; both put four consecutive elements per group and lane.
TEST(QuantizeActLanes, ReorderReferenceQ8KValues) {
    constexpr int64_t n = 3 * kQkK;
    std::vector<float> x(static_cast<size_t>(n));
    test::fill_uniform(x.data(), n, -3.0f, 3.0f);
    std::vector<BlockQ8_K> want(n / kQkK);
    type_traits(GgmlType::Q8_K).quantize(x.data(), want.data(), n);
    for (const Lanes layout : {Lanes::K4, Lanes::K6}) {
        std::vector<BlockQ8KLanes> got(n / kQkK);
        (layout == Lanes::K4 ? quantize_q8_k_lanes4 : quantize_q8_k_lanes6)(x.data(), got.data(), n);
        for (size_t b = 0; b < want.size(); ++b) {
            const BlockQ8_K& w = want[b];
            const BlockQ8KLanes& g = got[b];
            EXPECT_EQ(g.aux[kLanesD], w.d);
            std::vector<int> seen(kQkK, 0);
            for (int p = 0; p < 4; ++p) {
                for (int lane = 0; lane < 16; ++lane) {
                    const int sub = layout == Lanes::K4 ? lane / 2 : 4 * (lane % 4) + lane / 4;
                    const int first = layout == Lanes::K4 ? 32 * sub + 8 * p + 4 * (lane % 2) : 16 * sub + 4 * p;
                    for (int i = 0; i < 4; ++i) {
                        const int8_t q = g.qs[64 * p + 4 * lane + i];
                        const int8_t value = layout == Lanes::K4 ? q : static_cast<int8_t>(static_cast<uint8_t>(q) - 128u);
                        ASSERT_EQ(value, w.qs[first + i]) << "block " << b << " group " << p << " lane " << lane;
                        ++seen[static_cast<size_t>(first + i)];
                    }
                }
            }
            for (int e = 0; e < kQkK; ++e) ASSERT_EQ(seen[static_cast<size_t>(e)], 1) << "element " << e;
            for (int j = 0; j < 8; ++j) {
                int sum = 0;
                for (int e = 0; e < 32; ++e) sum += w.qs[32 * j + e];
                EXPECT_EQ(g.aux[j], layout == Lanes::K4 ? static_cast<float>(sum) : 0.0f) << "sub-block " << j;
            }
            for (int j = 8; j < kLanesD; ++j) EXPECT_EQ(g.aux[j], 0.0f);
        }
    }
}


// The signed 32-element formats' pairs (act_lanes.h) against quant/'s quantize_q8_0, an odd
// number of blocks so the row ends with half a pair.
TEST(QuantizeActLanes, PairsHoldReferenceQ8_0Values) {
    constexpr int64_t n_blocks = 5, n = n_blocks * kQk32;
    std::vector<float> x(static_cast<size_t>(n));
    test::fill_uniform(x.data(), n, -3.0f, 3.0f);
    std::vector<BlockQ8_0> want(n_blocks);
    type_traits(GgmlType::Q8_0).quantize(x.data(), want.data(), n);
    std::vector<BlockQ8_0Pair> got((n_blocks + 1) / 2);
    std::memset(got.data(), 0x5A, got.size() * sizeof(BlockQ8_0Pair));
    quantize_q8_0_pairs(x.data(), got.data(), n);
    for (int64_t b = 0; b < n_blocks + 1; ++b) {  // the block after the last is the padding
        const BlockQ8_0Pair& pair = got[static_cast<size_t>(b / 2)];
        const int half = static_cast<int>(b % 2);
        for (int i = 0; i < kQk32; ++i) {
            const int q = static_cast<int>(pair.qs[32 * half + i]) - 128;
            ASSERT_EQ(q, b < n_blocks ? want[static_cast<size_t>(b)].qs[i] : 0) << "block " << b << " element " << i;
        }
        for (int l = 0; l < 8; ++l)
            EXPECT_EQ(pair.d[8 * half + l], b < n_blocks ? fp16_to_fp32(want[static_cast<size_t>(b)].d) : 0.0f)
                << "block " << b;
    }
}

}  // namespace
}  // namespace strata::cpu
