// Random rows in every supported format dequantize (with quant/'s reference) to finite values
// of the requested mean and std, are deterministic per (seed, row), and reject what they
// cannot write.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "engine/synth/weight_fill.h"

namespace strata {
namespace {

struct Stats {
    double mean = 0, std = 0;
    bool finite = true;
};

Stats dequantized_stats(GgmlType type, WeightDist dist, int64_t rows, int64_t ne0, uint64_t seed) {
    std::vector<uint8_t> data(row_bytes(type, ne0) * rows);
    fill_rows(type, dist, seed, 0, rows, ne0, data.data());
    std::vector<float> values(static_cast<size_t>(rows * ne0));
    type_traits(type).dequantize(data.data(), values.data(), rows * ne0);
    Stats s;
    double sum = 0, sum_sq = 0;
    for (float v : values) {
        s.finite = s.finite && std::isfinite(v);
        sum += v;
        sum_sq += static_cast<double>(v) * v;
    }
    double n = static_cast<double>(values.size());
    s.mean = sum / n;
    s.std = std::sqrt(sum_sq / n - s.mean * s.mean);
    return s;
}

class FillType : public ::testing::TestWithParam<GgmlType> {};

TEST_P(FillType, DequantizesToTheRequestedStd) {
    const GgmlType type = GetParam();
    for (float std : {0.0059f, 0.0156f, 0.05f}) {  // 1/sqrt(28672), 1/sqrt(4096), larger
        Stats s = dequantized_stats(type, {0.0f, std}, 64, 1024, 7);
        EXPECT_TRUE(s.finite);
        EXPECT_NEAR(s.std, std, 0.03 * std) << type_traits(type).name;
        EXPECT_NEAR(s.mean, 0.0, 0.03 * std) << type_traits(type).name;
    }
}

TEST_P(FillType, RowsDependOnlyOnSeedAndRow) {
    const GgmlType type = GetParam();
    const int64_t ne0 = 512;
    const size_t rb = row_bytes(type, ne0);
    std::vector<uint8_t> all(rb * 10), split(rb * 10), other(rb * 10);
    fill_rows(type, {0.0f, 0.02f}, 99, 0, 10, ne0, all.data());
    fill_rows(type, {0.0f, 0.02f}, 99, 0, 3, ne0, split.data());
    fill_rows(type, {0.0f, 0.02f}, 99, 3, 7, ne0, split.data() + 3 * rb);
    EXPECT_EQ(all, split);
    fill_rows(type, {0.0f, 0.02f}, 100, 0, 10, ne0, other.data());
    EXPECT_NE(all, other);
}

INSTANTIATE_TEST_SUITE_P(Types, FillType,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16,
                                           GgmlType::Q8_0, GgmlType::Q5_0, GgmlType::Q4_K,
                                           GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ2_XXS,
                                           GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS,
                                           GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M,
                                           GgmlType::TQ1_0, GgmlType::TQ2_0),
                         [](const auto& info) {
                             return std::string(type_traits(info.param).name);
                         });

TEST(WeightFill, PlainTypesTakeAMean) {
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
        Stats s = dequantized_stats(type, {1.0f, 0.02f}, 4, 1024, 3);
        EXPECT_NEAR(s.mean, 1.0, 0.002) << type_traits(type).name;
        EXPECT_NEAR(s.std, 0.02, 0.001) << type_traits(type).name;
    }
}

TEST(WeightFill, RejectsWhatItCannotWrite) {
    std::vector<uint8_t> buf(1024);
    EXPECT_FALSE(can_fill(GgmlType::Q4_0));
    EXPECT_THROW(fill_rows(GgmlType::Q4_0, {}, 1, 0, 1, 32, buf.data()), UnsupportedError);
    EXPECT_THROW(fill_rows(GgmlType::Q8_0, {1.0f, 0.1f}, 1, 0, 1, 32, buf.data()), ArgumentError);
}

}  // namespace
}  // namespace strata
