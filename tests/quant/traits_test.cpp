// The type traits table and block layouts: sizes against the structs and gguf-py's
// GGML_QUANT_SIZES, id and name lookups, and argument checks of every reference function.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/ggml_type.h"
#include "quant/reference.h"

namespace strata {
namespace {

struct Expected {
    uint32_t id;
    const char* name;
    int64_t block_size;
    size_t type_size;
    bool has_dequantize;
    bool has_quantize;
};

// (block, bytes) from gguf-py 0.19's GGML_QUANT_SIZES, except Q8_1 (36 as in ggml, not 40).
const Expected kExpected[] = {
    {0, "f32", 1, 4, true, true},         {1, "f16", 1, 2, true, true},
    {2, "q4_0", 32, 18, true, true},      {3, "q4_1", 32, 20, true, false},
    {6, "q5_0", 32, 22, true, true},      {7, "q5_1", 32, 24, true, false},
    {8, "q8_0", 32, 34, true, true},      {9, "q8_1", 32, 36, true, true},
    {10, "q2_K", 256, 84, true, false},   {11, "q3_K", 256, 110, true, false},
    {12, "q4_K", 256, 144, true, true},   {13, "q5_K", 256, 176, true, false},
    {14, "q6_K", 256, 210, true, true},   {15, "q8_K", 256, 292, true, true},
    {16, "iq2_xxs", 256, 66, true, true}, {17, "iq2_xs", 256, 74, true, true},
    {18, "iq3_xxs", 256, 98, true, true}, {19, "iq1_s", 256, 50, true, true},
    {20, "iq4_nl", 32, 18, true, false},  {21, "iq3_s", 256, 110, true, true},
    {22, "iq2_s", 256, 82, true, true}, {23, "iq4_xs", 256, 136, true, false},
    {24, "i8", 1, 1, false, false},       {25, "i16", 1, 2, false, false},
    {26, "i32", 1, 4, false, false},      {27, "i64", 1, 8, false, false},
    {28, "f64", 1, 8, false, false},      {29, "iq1_m", 256, 56, true, true},
    {30, "bf16", 1, 2, true, true},       {34, "tq1_0", 256, 54, true, true},
    {35, "tq2_0", 256, 66, true, true}, {39, "mxfp4", 32, 17, true, false},
    {40, "nvfp4", 64, 36, false, false},  {41, "q1_0", 128, 18, false, false},
};

TEST(QuantTraits, MatchGgufQuantSizes) {
    for (const Expected& e : kExpected) {
        const TypeTraits* t = find_type_traits(e.id);
        ASSERT_NE(t, nullptr) << "id " << e.id;
        EXPECT_EQ(static_cast<uint32_t>(t->type), e.id);
        EXPECT_EQ(t->name, e.name) << "id " << e.id;
        EXPECT_EQ(t->block_size, e.block_size) << e.name;
        EXPECT_EQ(t->type_size, e.type_size) << e.name;
        EXPECT_EQ(t->dequantize != nullptr, e.has_dequantize) << e.name;
        EXPECT_EQ(t->quantize != nullptr, e.has_quantize) << e.name;
        EXPECT_EQ(t->is_quantized, e.block_size > 1) << e.name;
        EXPECT_EQ(&type_traits(t->type), t);
    }
}

TEST(QuantTraits, BlockStructsMatchTraits) {
    EXPECT_EQ(type_traits(GgmlType::Q4_0).type_size, sizeof(BlockQ4_0));
    EXPECT_EQ(type_traits(GgmlType::Q4_1).type_size, sizeof(BlockQ4_1));
    EXPECT_EQ(type_traits(GgmlType::Q5_0).type_size, sizeof(BlockQ5_0));
    EXPECT_EQ(type_traits(GgmlType::Q5_1).type_size, sizeof(BlockQ5_1));
    EXPECT_EQ(type_traits(GgmlType::Q8_0).type_size, sizeof(BlockQ8_0));
    EXPECT_EQ(type_traits(GgmlType::Q8_1).type_size, sizeof(BlockQ8_1));
    EXPECT_EQ(type_traits(GgmlType::Q2_K).type_size, sizeof(BlockQ2_K));
    EXPECT_EQ(type_traits(GgmlType::Q3_K).type_size, sizeof(BlockQ3_K));
    EXPECT_EQ(type_traits(GgmlType::Q4_K).type_size, sizeof(BlockQ4_K));
    EXPECT_EQ(type_traits(GgmlType::Q5_K).type_size, sizeof(BlockQ5_K));
    EXPECT_EQ(type_traits(GgmlType::Q6_K).type_size, sizeof(BlockQ6_K));
    EXPECT_EQ(type_traits(GgmlType::Q8_K).type_size, sizeof(BlockQ8_K));
    EXPECT_EQ(type_traits(GgmlType::IQ4_NL).type_size, sizeof(BlockIq4Nl));
    EXPECT_EQ(type_traits(GgmlType::IQ4_XS).type_size, sizeof(BlockIq4Xs));
    EXPECT_EQ(type_traits(GgmlType::MXFP4).type_size, sizeof(BlockMxfp4));
    EXPECT_EQ(type_traits(GgmlType::IQ2_XXS).type_size, sizeof(BlockIq2Xxs));
    EXPECT_EQ(type_traits(GgmlType::IQ2_XS).type_size, sizeof(BlockIq2Xs));
    EXPECT_EQ(type_traits(GgmlType::IQ2_S).type_size, sizeof(BlockIq2S));
    EXPECT_EQ(type_traits(GgmlType::IQ3_XXS).type_size, sizeof(BlockIq3Xxs));
    EXPECT_EQ(type_traits(GgmlType::IQ3_S).type_size, sizeof(BlockIq3S));
    EXPECT_EQ(type_traits(GgmlType::IQ1_S).type_size, sizeof(BlockIq1S));
    EXPECT_EQ(type_traits(GgmlType::IQ1_M).type_size, sizeof(BlockIq1M));
    EXPECT_EQ(type_traits(GgmlType::TQ1_0).type_size, sizeof(BlockTq1_0));
    EXPECT_EQ(type_traits(GgmlType::TQ2_0).type_size, sizeof(BlockTq2_0));
    EXPECT_EQ(offsetof(BlockIq3S, scales), 106u);  // d, qs[64], qh[8], signs[32], scales[4]
    EXPECT_EQ(offsetof(BlockIq1S, qh), 34u);
    EXPECT_EQ(offsetof(BlockIq1M, scales), 48u);  // IQ1_M has no leading d
    EXPECT_EQ(offsetof(BlockTq1_0, d), 52u);
    EXPECT_EQ(offsetof(BlockQ2_K, d), 80u);  // d last in Q2_K/Q3_K/Q6_K
    EXPECT_EQ(offsetof(BlockQ3_K, d), 108u);
    EXPECT_EQ(offsetof(BlockQ6_K, d), 208u);
    EXPECT_EQ(offsetof(BlockQ4_K, scales), 4u);  // d, dmin first in Q4_K/Q5_K
    EXPECT_EQ(offsetof(BlockQ8_K, qs), 4u);      // Q8_K's d is a float
}

TEST(QuantTraits, IqFamilies) {
    int lattice = 0;
    for (const Expected& e : kExpected) lattice += is_iq_lattice(find_type_traits(e.id)->type);
    EXPECT_EQ(lattice, 7);
    EXPECT_TRUE(is_iq_lattice(GgmlType::IQ1_M));
    EXPECT_FALSE(is_iq_lattice(GgmlType::IQ4_XS));  // a plain table, no lattice
    EXPECT_TRUE(is_ternary(GgmlType::TQ2_0));
    EXPECT_FALSE(is_ternary(GgmlType::Q2_K));
}

TEST(QuantTraits, UnknownAndRemovedIdsAreNull) {
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 43u, 44u, 63u, 64u, 1000u, 0xffffffffu}) {
        EXPECT_EQ(find_type_traits(id), nullptr) << "id " << id;
    }
    int known = 0;
    for (uint32_t id = 0; id < 256; ++id) known += find_type_traits(id) != nullptr;
    EXPECT_EQ(known, static_cast<int>(std::size(kExpected)));
    EXPECT_THROW(type_traits(static_cast<GgmlType>(4)), std::invalid_argument);
}

TEST(QuantTraits, NameLookupIsCaseInsensitive) {
    EXPECT_EQ(find_type_traits_by_name("q4_K"), &type_traits(GgmlType::Q4_K));
    EXPECT_EQ(find_type_traits_by_name("Q4_K"), &type_traits(GgmlType::Q4_K));
    EXPECT_EQ(find_type_traits_by_name("IQ4_NL"), &type_traits(GgmlType::IQ4_NL));
    EXPECT_EQ(find_type_traits_by_name("bf16"), &type_traits(GgmlType::BF16));
    EXPECT_EQ(find_type_traits_by_name("q4"), nullptr);
    EXPECT_EQ(find_type_traits_by_name("q4_k_m"), nullptr);
    EXPECT_EQ(find_type_traits_by_name(""), nullptr);
    for (const Expected& e : kExpected) EXPECT_EQ(find_type_traits_by_name(e.name), find_type_traits(e.id));
}

TEST(QuantTraits, RowBytes) {
    EXPECT_EQ(row_bytes(GgmlType::F32, 7), 28u);
    EXPECT_EQ(row_bytes(GgmlType::Q4_K, 2048), 8u * 144u);
    EXPECT_EQ(row_bytes(GgmlType::Q8_0, 640), 20u * 34u);
    EXPECT_EQ(row_bytes(GgmlType::Q5_0, 0), 0u);
    EXPECT_THROW(row_bytes(GgmlType::Q4_K, 640), std::invalid_argument);
    EXPECT_THROW(row_bytes(GgmlType::Q8_0, -32), std::invalid_argument);
    try {
        row_bytes(GgmlType::Q6_K, 300);
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("300"), std::string::npos) << msg;
        EXPECT_NE(msg.find("256"), std::string::npos) << msg;
    }
}

TEST(QuantTraits, ReferenceFunctionsRejectPartialBlocks) {
    std::vector<float> f(1024, 1.0f);
    std::vector<uint8_t> raw(4096, 0);
    for (const Expected& e : kExpected) {
        const TypeTraits& t = *find_type_traits(e.id);
        // Plain types have no partial blocks; a negative count is their only bad n.
        const int64_t bad = t.block_size == 1 ? -1 : t.block_size + 1;
        if (t.dequantize) {
            EXPECT_THROW(t.dequantize(raw.data(), f.data(), bad), std::invalid_argument) << e.name;
            EXPECT_NO_THROW(t.dequantize(raw.data(), f.data(), 0)) << e.name;
        }
        if (t.quantize) {
            EXPECT_THROW(t.quantize(f.data(), raw.data(), bad), std::invalid_argument) << e.name;
        }
    }
}

TEST(QuantBlocks, ScaleMinK4PackingRoundTrips) {
    // Every 6-bit value at every position, in both the scale and the min.
    for (int v = 0; v < 64; ++v) {
        for (int pos = 0; pos < 8; ++pos) {
            uint8_t sc[8], m[8];
            for (int j = 0; j < 8; ++j) {
                sc[j] = static_cast<uint8_t>((j == pos) ? v : (7 * j + 3) & 63);
                m[j] = static_cast<uint8_t>((j == pos) ? 63 - v : (11 * j + 5) & 63);
            }
            uint8_t packed[kKScaleSize];
            pack_scale_min_k4(packed, sc, m);
            for (int j = 0; j < 8; ++j) {
                const ScaleMin sm = unpack_scale_min_k4(packed, j);
                ASSERT_EQ(sm.sc, sc[j]) << "v " << v << " pos " << pos << " j " << j;
                ASSERT_EQ(sm.m, m[j]) << "v " << v << " pos " << pos << " j " << j;
            }
        }
    }
}

}  // namespace
}  // namespace strata
