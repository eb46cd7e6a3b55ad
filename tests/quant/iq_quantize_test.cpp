// The i-quant reference quantizers (quant/reference.h): every lattice point they pick is the
// nearest one at the stored scales and signs — checked black-box by rewriting each point's
// index in the packed block to every other value and dequantizing with the reference — and
// all-zero blocks stay zero. Their NMSE bounds and gguf's reading of their blocks are checked
// in oracle_test.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "quant/blocks.h"
#include "quant/ggml_type.h"

namespace strata {
namespace {

// Where a format keeps lattice point p's index (from gguf-py's quants.py; quant/blocks.h).
struct IndexField {
    int n_points;      // per block
    int width;         // elements per point
    int n_values;      // indices 0 .. n_values - 1
    void (*set)(uint8_t* block, int p, int index);
};

void set_bits(uint8_t* b, int byte, int shift, int bits, int v) {
    uint32_t w = 0;
    std::memcpy(&w, b + byte, 2);
    const uint32_t mask = ((1u << bits) - 1u) << shift;
    w = (w & ~mask) | ((static_cast<uint32_t>(v) << shift) & mask);
    std::memcpy(b + byte, &w, 2);
}

IndexField index_field(GgmlType type) {
    switch (type) {
        case GgmlType::IQ2_XXS:
            return {32, 8, 256, [](uint8_t* b, int p, int v) { b[2 + 8 * (p / 4) + p % 4] = static_cast<uint8_t>(v); }};
        case GgmlType::IQ2_XS:
            return {32, 8, 512, [](uint8_t* b, int p, int v) { set_bits(b, 2 + 2 * p, 0, 9, v); }};
        case GgmlType::IQ2_S:
            return {32, 8, 1024, [](uint8_t* b, int p, int v) {
                        b[2 + p] = static_cast<uint8_t>(v);
                        set_bits(b, 66 + p / 4, 2 * (p % 4), 2, v >> 8);
                    }};
        case GgmlType::IQ3_XXS:
            return {64, 4, 256, [](uint8_t* b, int p, int v) { b[2 + p] = static_cast<uint8_t>(v); }};
        case GgmlType::IQ3_S:
            return {64, 4, 512, [](uint8_t* b, int p, int v) {
                        b[2 + p] = static_cast<uint8_t>(v);
                        set_bits(b, 66 + p / 8, p % 8, 1, v >> 8);
                    }};
        case GgmlType::IQ1_S:
            return {32, 8, 2048, [](uint8_t* b, int p, int v) {
                        b[2 + p] = static_cast<uint8_t>(v);
                        set_bits(b, 34 + 2 * (p / 4), 3 * (p % 4), 3, v >> 8);
                    }};
        case GgmlType::IQ1_M:
            return {32, 8, 2048, [](uint8_t* b, int p, int v) {
                        b[p] = static_cast<uint8_t>(v);
                        set_bits(b, 32 + p / 2, 4 * (p % 2), 3, v >> 8);
                    }};
        default:
            return {0, 0, 0, nullptr};
    }
}

double group_sse(const float* x, const float* y, int width) {
    double s = 0.0;
    for (int j = 0; j < width; ++j) s += (static_cast<double>(x[j]) - y[j]) * (static_cast<double>(x[j]) - y[j]);
    return s;
}

class IqQuantize : public ::testing::TestWithParam<GgmlType> {};

TEST_P(IqQuantize, EveryPointIsTheNearestAtTheStoredScale) {
    const TypeTraits& t = type_traits(GetParam());
    const IndexField f = index_field(t.type);
    ASSERT_NE(f.set, nullptr);
    std::mt19937 rng(77);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float scale : {0.02f, 3.0f}) {
        std::vector<float> x(kQkK);
        for (float& v : x) v = normal(rng) * scale;
        std::vector<uint8_t> block(t.type_size);
        t.quantize(x.data(), block.data(), kQkK);
        std::vector<float> y(kQkK), alt(kQkK);
        t.dequantize(block.data(), y.data(), kQkK);
        int checked = 0;
        for (int p = 0; p < f.n_points; ++p) {
            const double chosen = group_sse(&x[p * f.width], &y[p * f.width], f.width);
            for (int v = 0; v < f.n_values; ++v) {
                std::vector<uint8_t> changed = block;
                f.set(changed.data(), p, v);
                t.dequantize(changed.data(), alt.data(), kQkK);
                const double other = group_sse(&x[p * f.width], &alt[p * f.width], f.width);
                ASSERT_GE(other, chosen * (1.0 - 1e-4) - 1e-12 * scale * scale)
                    << t.name << " scale " << scale << " point " << p << ": index " << v << " is nearer";
                ++checked;
            }
        }
        EXPECT_EQ(checked, f.n_points * f.n_values);
    }
}

TEST_P(IqQuantize, ZeroBlocksDequantizeToZero) {
    const TypeTraits& t = type_traits(GetParam());
    std::vector<float> x(2 * kQkK, 0.0f), y(2 * kQkK, 1.0f);
    for (int i = kQkK; i < 2 * kQkK; ++i) x[i] = (i % 7 == 0) ? 1.5f : 0.0f;  // second block sparse
    std::vector<uint8_t> blocks(2 * t.type_size, 0xA5);
    t.quantize(x.data(), blocks.data(), 2 * kQkK);
    t.dequantize(blocks.data(), y.data(), 2 * kQkK);
    for (int i = 0; i < kQkK; ++i) ASSERT_EQ(y[i], 0.0f) << t.name << " element " << i;
    // The sparse block keeps its sign pattern: its largest values come back positive.
    for (int i = kQkK; i < 2 * kQkK; i += 7) EXPECT_GT(y[i], 0.0f) << t.name << " element " << i;
}

// Non-finite inputs give unspecified blocks (quant/reference.h), but no undefined behaviour
// (the sanitizer build runs this) and blocks that still dequantize without trapping.
// NaN and ±inf in the first two blocks: the quantizers return (no crash or hang, clean under the
// sanitizers) and the third, finite block comes back finite and close to its input, not
// poisoned by its neighbours.
TEST(IqQuantizeNonFinite, NanAndInfInputsStillGiveBlocks) {
    std::vector<float> x(3 * kQkK);
    for (int i = 0; i < 3 * kQkK; ++i) x[i] = static_cast<float>(i % 17) - 8.0f;
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[kQkK + 5] = std::numeric_limits<float>::infinity();
    x[kQkK + 9] = -std::numeric_limits<float>::infinity();
    for (GgmlType type : {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                          GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::TQ1_0, GgmlType::TQ2_0}) {
        const TypeTraits& t = type_traits(type);
        std::vector<uint8_t> blocks(3 * t.type_size);
        std::vector<float> y(3 * kQkK);
        t.quantize(x.data(), blocks.data(), 3 * kQkK);
        t.dequantize(blocks.data(), y.data(), 3 * kQkK);
        double err = 0.0, norm = 0.0;
        for (int i = 2 * kQkK; i < 3 * kQkK; ++i) {
            ASSERT_TRUE(std::isfinite(y[i])) << t.name << " element " << i;
            err += (y[i] - x[i]) * (y[i] - x[i]);
            norm += x[i] * x[i];
        }
        EXPECT_LT(err / norm, 0.5) << t.name;
    }
}

INSTANTIATE_TEST_SUITE_P(Types, IqQuantize,
                         ::testing::Values(GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS,
                                           GgmlType::IQ3_S, GgmlType::IQ1_S, GgmlType::IQ1_M),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

}  // namespace
}  // namespace strata
