// Round-trip error bounds of the reference quantizers (documented in quant/reference.h), checked
// element by element on random rows of odd block counts: Gaussian blocks with uneven sub-block
// scales, constant blocks, blocks with one huge outlier and blocks of tiny values (f16 subnormal d).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/blocks.h"
#include "quant/ggml_type.h"
#include "quant/half.h"
#include "quant/reference.h"

namespace strata {
namespace {

constexpr int kBlockKinds = 6;

// n_blocks blocks of block_size values; block b is of kind b % kBlockKinds. No block is all zero.
std::vector<float> make_row(int block_size, int n_blocks, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uni(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(block_size) * n_blocks);
    for (int b = 0; b < n_blocks; ++b) {
        float* v = x.data() + static_cast<size_t>(b) * block_size;
        const float scale = std::pow(10.0f, -3.0f + 5.0f * uni(rng));  // 1e-3 .. 1e2
        const float shift = (2.0f * uni(rng) - 1.0f) * scale;
        switch (b % kBlockKinds) {
            case 0:
            case 1:
                for (int i = 0; i < block_size; ++i) v[i] = normal(rng) * scale + shift;
                break;
            case 2:  // sub-blocks of 16 with scales spread over two decades
                for (int i = 0; i < block_size; i += 16) {
                    const float s = scale * std::pow(10.0f, 2.0f * uni(rng) - 1.0f);
                    for (int k = i; k < std::min(i + 16, block_size); ++k) v[k] = normal(rng) * s;
                }
                break;
            case 3:  // constant, alternating sign
                std::fill(v, v + block_size, (b % 2 ? -1.0f : 1.0f) * (0.1f + 10.0f * uni(rng)));
                break;
            case 4: {  // one huge outlier
                for (int i = 0; i < block_size; ++i) v[i] = normal(rng);
                v[static_cast<int>(uni(rng) * static_cast<float>(block_size - 1))] = (b % 2 ? -1.0f : 1.0f) * 1e4f;
                break;
            }
            default:  // tiny: the block scale falls into (or below) the f16 subnormal range
                for (int i = 0; i < block_size; ++i) v[i] = normal(rng) * 1e-6f + 1e-7f;
                break;
        }
    }
    return x;
}

float absmax(const float* x, int n) {
    float a = 0.0f;
    for (int i = 0; i < n; ++i) a = std::max(a, std::fabs(x[i]));
    return a;
}

// Float32 rounding slack on top of a documented bound: a few ulps of the block's magnitude.
float slack(float amax) { return 4e-7f * amax + 1e-30f; }

struct RoundTrip {
    std::vector<float> x;
    std::vector<uint8_t> q;  // the blocks
    std::vector<float> y;
};

RoundTrip round_trip(GgmlType type, int n_blocks, uint32_t seed) {
    const TypeTraits& t = type_traits(type);
    RoundTrip r;
    r.x = make_row(static_cast<int>(t.block_size), n_blocks, seed);
    const auto n = static_cast<int64_t>(r.x.size());
    r.q.assign(row_bytes(type, n), 0xA5);
    r.y.assign(r.x.size(), NAN);
    t.quantize(r.x.data(), r.q.data(), n);
    t.dequantize(r.q.data(), r.y.data(), n);
    for (size_t i = 0; i < r.y.size(); ++i) EXPECT_TRUE(std::isfinite(r.y[i])) << t.name << " element " << i;
    return r;
}

template <typename Block>
Block block_at(const RoundTrip& r, int b) {
    Block blk;
    std::memcpy(&blk, r.q.data() + sizeof(Block) * b, sizeof(Block));
    return blk;
}

constexpr int kBlocks32 = 61;  // odd block counts
constexpr int kBlocksK = 25;
constexpr uint32_t kSeeds[] = {1, 2, 3};

TEST(QuantBounds, Q8_0) {
    for (uint32_t seed : kSeeds) {
        const RoundTrip r = round_trip(GgmlType::Q8_0, kBlocks32, seed);
        for (int b = 0; b < kBlocks32; ++b) {
            const float* x = r.x.data() + 32 * b;
            const float amax = absmax(x, 32);
            const float d = amax / 127.0f;
            const float d16 = fp16_to_fp32(block_at<BlockQ8_0>(r, b).d);
            const float bound = 0.5f * d + 127.0f * std::fabs(d - d16) + slack(amax);
            for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(x[j] - r.y[32 * b + j]), bound) << "block " << b << " j " << j;
        }
    }
}

TEST(QuantBounds, Q8_1) {
    for (uint32_t seed : kSeeds) {
        const RoundTrip r = round_trip(GgmlType::Q8_1, kBlocks32, seed);
        for (int b = 0; b < kBlocks32; ++b) {
            const float* x = r.x.data() + 32 * b;
            const float amax = absmax(x, 32);
            const float d = amax / 127.0f;
            const BlockQ8_1 blk = block_at<BlockQ8_1>(r, b);
            const float d16 = fp16_to_fp32(blk.d);
            const float bound = 0.5f * d + 127.0f * std::fabs(d - d16) + slack(amax);
            int sum = 0;
            for (int j = 0; j < 32; ++j) {
                ASSERT_LE(std::fabs(x[j] - r.y[32 * b + j]), bound) << "block " << b << " j " << j;
                sum += blk.qs[j];
            }
            // s = f16(d * sum(q)): within f16 rounding of the sum of the dequantized values.
            const float exact = d * static_cast<float>(sum);
            ASSERT_LE(std::fabs(fp16_to_fp32(blk.s) - exact), std::fabs(exact) * 0x1p-11f + 0x1p-25f) << "block " << b;
        }
    }
}

// Q4_0 / Q5_0: d = max/-half; the -max end clips one step, so the bound is a full step.
void check_offset_type(GgmlType type, float half) {
    for (uint32_t seed : kSeeds) {
        const RoundTrip r = round_trip(type, kBlocks32, seed);
        const size_t type_size = type_traits(type).type_size;
        for (int b = 0; b < kBlocks32; ++b) {
            const float* x = r.x.data() + 32 * b;
            const float amax = absmax(x, 32);
            uint16_t d_bits = 0;
            std::memcpy(&d_bits, r.q.data() + type_size * b, 2);  // d is the first field of both
            const float d = amax / half;
            const float d16 = std::fabs(fp16_to_fp32(d_bits));
            const float bound = d + half * std::fabs(d - d16) + slack(amax);
            for (int j = 0; j < 32; ++j) {
                ASSERT_LE(std::fabs(x[j] - r.y[32 * b + j]), bound) << type_traits(type).name << " block " << b << " j " << j;
            }
            // The element of largest |x| with the sign of max is exact up to the f16 rounding.
            const float* it = std::find_if(x, x + 32, [&](float v) { return std::fabs(v) == amax; });
            ASSERT_LE(std::fabs(*it - r.y[32 * b + (it - x)]), half * std::fabs(d - d16) + slack(amax));
        }
    }
}

TEST(QuantBounds, Q4_0) { check_offset_type(GgmlType::Q4_0, 8.0f); }
TEST(QuantBounds, Q5_0) { check_offset_type(GgmlType::Q5_0, 16.0f); }

TEST(QuantBounds, Q8_K) {
    for (uint32_t seed : kSeeds) {
        const RoundTrip r = round_trip(GgmlType::Q8_K, kBlocksK, seed);
        for (int b = 0; b < kBlocksK; ++b) {
            const float* x = r.x.data() + 256 * b;
            const float amax = absmax(x, 256);
            const BlockQ8_K blk = block_at<BlockQ8_K>(r, b);
            ASSERT_LE(std::fabs(blk.d), amax / 127.0f * (1.0f + 1e-6f)) << "block " << b;
            for (int e = 0; e < 256; ++e) {
                ASSERT_LE(std::fabs(x[e] - r.y[256 * b + e]), 0.5f * std::fabs(blk.d) + slack(amax)) << b << " " << e;
                ASSERT_GE(blk.qs[e], -127);
            }
            for (int k = 0; k < 16; ++k) {
                int sum = 0;
                for (int l = 0; l < 16; ++l) sum += blk.qs[16 * k + l];
                ASSERT_EQ(blk.bsums[k], sum) << "block " << b << " bsum " << k;
            }
        }
    }
}

TEST(QuantBounds, Q4_K) {
    for (uint32_t seed : kSeeds) {
        const RoundTrip r = round_trip(GgmlType::Q4_K, kBlocksK, seed);
        for (int b = 0; b < kBlocksK; ++b) {
            const BlockQ4_K blk = block_at<BlockQ4_K>(r, b);
            const float d16 = fp16_to_fp32(blk.d), dmin16 = fp16_to_fp32(blk.dmin);
            ASSERT_GE(d16, 0.0f);
            ASSERT_GE(dmin16, 0.0f);
            for (int s = 0; s < 8; ++s) {
                const float* x = r.x.data() + 256 * b + 32 * s;
                const float amax = absmax(x, 32);
                const float hi = *std::max_element(x, x + 32);
                const float neg = std::max(0.0f, -*std::min_element(x, x + 32));
                const ScaleMin sm = unpack_scale_min_k4(blk.scales, s);
                const float ds = d16 * static_cast<float>(sm.sc), dm = dmin16 * static_cast<float>(sm.m);
                ASSERT_LE(ds, (hi + dm) / 15.0f + 4.0f * d16 + slack(amax)) << "block " << b << " sub " << s;
                ASSERT_LE(dm, neg + 2.0f * dmin16 + slack(amax)) << "block " << b << " sub " << s;
                for (int l = 0; l < 32; ++l) {
                    ASSERT_LE(std::fabs(x[l] - r.y[256 * b + 32 * s + l]), 0.5f * ds + slack(amax + dm))
                        << "block " << b << " sub " << s << " l " << l;
                }
            }
        }
    }
}

TEST(QuantBounds, Q6_K) {
    for (uint32_t seed : kSeeds) {
        const RoundTrip r = round_trip(GgmlType::Q6_K, kBlocksK, seed);
        for (int b = 0; b < kBlocksK; ++b) {
            const BlockQ6_K blk = block_at<BlockQ6_K>(r, b);
            const float d16 = fp16_to_fp32(blk.d);
            for (int s = 0; s < 16; ++s) {
                const float* x = r.x.data() + 256 * b + 16 * s;
                const float amax = absmax(x, 16);
                const float ds = d16 * static_cast<float>(blk.scales[s]);
                ASSERT_GE(blk.scales[s], 0);
                ASSERT_LE(ds, amax / 31.0f + 4.0f * d16 + slack(amax)) << "block " << b << " sub " << s;
                for (int l = 0; l < 16; ++l) {
                    ASSERT_LE(std::fabs(x[l] - r.y[256 * b + 16 * s + l]), 0.5f * ds + slack(amax))
                        << "block " << b << " sub " << s << " l " << l;
                }
            }
        }
    }
}

TEST(QuantBounds, FloatTypes) {
    for (uint32_t seed : kSeeds) {
        const RoundTrip f32 = round_trip(GgmlType::F32, 1001, seed);
        EXPECT_EQ(std::memcmp(f32.x.data(), f32.y.data(), f32.x.size() * sizeof(float)), 0);
        const RoundTrip f16 = round_trip(GgmlType::F16, 1001, seed);
        for (size_t i = 0; i < f16.x.size(); ++i) {
            const float x = f16.x[i];
            ASSERT_LE(std::fabs(x - f16.y[i]), std::max(std::fabs(x) * 0x1p-11f, 0x1p-25f)) << i;
        }
        const RoundTrip bf16 = round_trip(GgmlType::BF16, 1001, seed);
        for (size_t i = 0; i < bf16.x.size(); ++i) {
            ASSERT_LE(std::fabs(bf16.x[i] - bf16.y[i]), std::fabs(bf16.x[i]) * 0x1p-8f) << i;
        }
    }
}

// The aggregate metric of ggml's test-quantize-fns (docs/FORMATS.md §6.2): x_i = 0.1 + 2 cos(i +
// offset), 4096 values, sqrt(sum diff^2) / n < 0.002 for every type here.
TEST(QuantBounds, GgmlStyleTotalError) {
    constexpr int n = 4096;
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) x[i] = 0.1f + 2.0f * std::cos(static_cast<float>(i) + 0.25f);
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K,
                          GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::F16, GgmlType::BF16}) {
        const TypeTraits& t = type_traits(type);
        std::vector<uint8_t> q(row_bytes(type, n));
        t.quantize(x.data(), q.data(), n);
        t.dequantize(q.data(), y.data(), n);
        double sum = 0.0;
        for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i] - y[i]) * (x[i] - y[i]);
        const double err = std::sqrt(sum) / n;
        EXPECT_LT(err, 0.002) << t.name;
        EXPECT_GT(err, 0.0) << t.name << ": a lossy type cannot be exact on this data";
    }
}

TEST(QuantBounds, ZeroBlocksStayZero) {
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K,
                          GgmlType::Q4_K, GgmlType::Q6_K}) {
        const TypeTraits& t = type_traits(type);
        const int64_t n = 3 * t.block_size;
        std::vector<float> x(static_cast<size_t>(n), 0.0f), y(static_cast<size_t>(n), NAN);
        for (int64_t i = t.block_size; i < 2 * t.block_size; ++i) x[static_cast<size_t>(i)] = 0.5f;  // middle block not zero
        std::vector<uint8_t> q(row_bytes(type, n));
        t.quantize(x.data(), q.data(), n);
        t.dequantize(q.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            if (x[static_cast<size_t>(i)] == 0.0f) {
                ASSERT_EQ(y[static_cast<size_t>(i)], 0.0f) << t.name << " " << i;
            }
        }
    }
}

// A non-finite value poisons only its own block: the blocks around it still round-trip exactly as
// they would alone.
TEST(QuantBounds, NonFiniteInputStaysInItsBlock) {
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K,
                          GgmlType::Q4_K, GgmlType::Q6_K}) {
        const TypeTraits& t = type_traits(type);
        const auto bs = static_cast<size_t>(t.block_size);
        for (float bad : {NAN, INFINITY, -INFINITY}) {
            std::vector<float> x = make_row(static_cast<int>(bs), 3, 7);
            const std::vector<float> clean = x;
            x[bs + bs / 3] = bad;  // middle block
            std::vector<uint8_t> q(row_bytes(type, static_cast<int64_t>(x.size())));
            std::vector<uint8_t> q_clean(q.size());
            t.quantize(x.data(), q.data(), static_cast<int64_t>(x.size()));
            t.quantize(clean.data(), q_clean.data(), static_cast<int64_t>(x.size()));
            EXPECT_EQ(std::memcmp(q.data(), q_clean.data(), t.type_size), 0) << t.name << " first block";
            EXPECT_EQ(std::memcmp(q.data() + 2 * t.type_size, q_clean.data() + 2 * t.type_size, t.type_size), 0)
                << t.name << " last block";
        }
    }
}

}  // namespace
}  // namespace strata
