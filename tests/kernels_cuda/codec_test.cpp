// The CUDA block codecs (kernels_cuda/codec.cuh) run on the host here, no GPU needed: dequant of
// every type bit for bit against quant/'s reference, and the dp4a decode against a double dot.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels_cuda/codec.cuh"
#include "kernels_cuda/codec_iq.cuh"
#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cuda {
namespace {

using cpu::test::HostTensor;

template <class F>
void for_codec(GgmlType type, F&& f) {
    switch (type) {
        case GgmlType::F32: return f(CodecF32{});
        case GgmlType::F16: return f(CodecF16{});
        case GgmlType::BF16: return f(CodecBf16{});
        case GgmlType::Q4_0: return f(CodecQ4_0{});
        case GgmlType::Q4_1: return f(CodecQ4_1{});
        case GgmlType::Q5_0: return f(CodecQ5_0{});
        case GgmlType::Q5_1: return f(CodecQ5_1{});
        case GgmlType::Q8_0: return f(CodecQ8_0{});
        case GgmlType::Q8_1: return f(CodecQ8_1{});
        case GgmlType::IQ4_NL: return f(CodecIq4Nl{});
        case GgmlType::MXFP4: return f(CodecMxfp4{});
        case GgmlType::Q2_K: return f(CodecQ2_K{});
        case GgmlType::Q3_K: return f(CodecQ3_K{});
        case GgmlType::Q4_K: return f(CodecQ4_K{});
        case GgmlType::Q5_K: return f(CodecQ5_K{});
        case GgmlType::Q6_K: return f(CodecQ6_K{});
        case GgmlType::Q8_K: return f(CodecQ8_K{});
        case GgmlType::IQ4_XS: return f(CodecIq4Xs{});
        case GgmlType::IQ2_XXS: return f(CodecIq2Xxs{});
        case GgmlType::IQ2_XS: return f(CodecIq2Xs{});
        case GgmlType::IQ2_S: return f(CodecIq2S{});
        case GgmlType::IQ3_XXS: return f(CodecIq3Xxs{});
        case GgmlType::IQ3_S: return f(CodecIq3S{});
        case GgmlType::IQ1_S: return f(CodecIq1S{});
        case GgmlType::IQ1_M: return f(CodecIq1M{});
        case GgmlType::TQ1_0: return f(CodecTq1_0{});
        case GgmlType::TQ2_0: return f(CodecTq2_0{});
        default: FAIL() << "no codec for " << type_traits(type).name;
    }
}

const GgmlType kAllTypes[] = {
    GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0,   GgmlType::Q4_1,  GgmlType::Q5_0,
    GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q2_K,
    GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,   GgmlType::Q8_K,  GgmlType::IQ4_XS,
    GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
    GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::TQ1_0, GgmlType::TQ2_0,
};

// Random rows of `type`; MXFP4 gets sane exponents by hand (the CPU helper writes an f16 scale
// over its first two bytes, which would make 2^(e-128) overflow).
HostTensor random_rows(GgmlType type, int64_t k, int64_t n) {
    HostTensor w = cpu::test::random_weights(type, k, n);
    if (type == GgmlType::MXFP4) {
        for (uint64_t b = 0; b < w.t.n_bytes() / 17; ++b) w.bytes[b * 17] = static_cast<uint8_t>(120 + b % 9);
    }
    return w;
}

int64_t test_k(GgmlType type) {
    const int64_t block = type_traits(type).block_size;
    return block == 1 ? 77 : block * 3;  // 77: a partial last item for plain types
}

class CodecTypes : public ::testing::TestWithParam<GgmlType> {};

TEST_P(CodecTypes, DequantMatchesReferenceBitForBit) {
    const GgmlType type = GetParam();
    const int64_t k = test_k(type), n = 5;
    const HostTensor w = random_rows(type, k, n);
    const std::vector<float> ref = cpu::test::dequantized(w.t);
    for_codec(type, [&](auto codec) {
        using C = decltype(codec);
        for (int64_t r = 0; r < n; ++r) {
            const auto* row = static_cast<const uint8_t*>(w.t.data) + r * w.t.nb[1];
            for (int64_t item = 0; item < (k + 31) / 32; ++item) {
                int sub = 0;
                const uint8_t* blk = item_block<C>(row, item, sub);
                const int valid = static_cast<int>(std::min<int64_t>(32, k - item * 32));
                float v[32];
                C::dequant(blk, sub, v, valid);
                for (int j = 0; j < valid; ++j) {
                    const float expect = ref[static_cast<size_t>(r * k + item * 32 + j)];
                    ASSERT_EQ(0, std::memcmp(&v[j], &expect, sizeof(float)))
                        << type_traits(type).name << " row " << r << " element " << item * 32 + j
                        << ": " << v[j] << " vs " << expect;
                }
            }
        }
    });
}

TEST_P(CodecTypes, Dp4aDecodeDotsLikeTheDequantizedRow) {
    const GgmlType type = GetParam();
    bool dp4a = false;
    for_codec(type, [&](auto codec) { dp4a = decltype(codec)::kDp4a; });
    if (!dp4a) GTEST_SKIP() << type_traits(type).name << " has no dp4a decode";
    const int64_t k = type_traits(type).block_size * 4, n = 3;
    const HostTensor w = random_rows(type, k, n);
    const std::vector<float> wf = cpu::test::dequantized(w.t);
    std::vector<float> x(static_cast<size_t>(k));
    cpu::test::fill_uniform(x.data(), k, -2.0f, 2.0f);
    // q8 activations and the x they stand for.
    std::vector<int8_t> xq(static_cast<size_t>(k));
    std::vector<float> xd(static_cast<size_t>(k / 32)), xs(static_cast<size_t>(k / 32));
    for (int64_t b = 0; b < k / 32; ++b) quantize_q8_act(&x[b * 32], &xq[b * 32], xd[b], xs[b]);
    for_codec(type, [&](auto codec) {
        using C = decltype(codec);
        if constexpr (C::kDp4a) {
            for (int64_t r = 0; r < n; ++r) {
                const auto* row = static_cast<const uint8_t*>(w.t.data) + r * w.t.nb[1];
                double got = 0.0, ref = 0.0, mag = 0.0;
                for (int64_t item = 0; item < k / 32; ++item) {
                    int sub = 0;
                    const uint8_t* blk = item_block<C>(row, item, sub);  // sets sub
                    const Q8Item it = C::decode(blk, sub);
                    int words[8];
                    std::memcpy(words, &xq[item * 32], sizeof(words));
                    got += dot_q8(it, words, xd[item], xs[item]);
                    for (int j = 0; j < 32; ++j) {
                        const double xv = static_cast<double>(xd[item]) * xq[item * 32 + j];
                        const double p = static_cast<double>(wf[r * k + item * 32 + j]) * xv;
                        ref += p;
                        mag += std::fabs(p);
                    }
                }
                EXPECT_NEAR(got, ref, 1e-5 * mag) << type_traits(type).name << " row " << r;
            }
        }
    });
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CodecTypes, ::testing::ValuesIn(kAllTypes));

TEST(CodecTables, IqSignParityMatchesQuant) {
    for (uint32_t i = 0; i < 128; ++i) EXPECT_EQ(iq_sign8(i), iq_sign_byte(i)) << i;
}

TEST(CodecTables, PackedValueTablesMatchQuant) {
    for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(iq4nl_value(i), kIq4nlValues[i]) << i;
        EXPECT_EQ(mxfp4_value(i), kMxfp4Values[i]) << i;
    }
}

TEST(CodecQ8Act, QuantizesWithinHalfAStep) {
    float x[32];
    cpu::test::fill_uniform(x, 32, -3.0f, 3.0f);
    int8_t q[32];
    float d = 0.0f, s = 0.0f;
    quantize_q8_act(x, q, d, s);
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
        EXPECT_LE(std::fabs(x[j] - d * q[j]), 0.5f * d * 1.0001f) << j;
        sum += q[j];
    }
    EXPECT_FLOAT_EQ(s, d * static_cast<float>(sum));
}

}  // namespace
}  // namespace strata::cuda
