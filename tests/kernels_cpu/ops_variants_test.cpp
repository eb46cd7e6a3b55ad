// The non-matmul ops through CpuBackend with each kernel variant forced (scalar, AVX2, AVX-512):
// rms_norm, rope (NORM / NEOX, freq factors, head dims 64..256), the gated activations and
// softcap against double references at odd sizes; get_rows and kv_store bit-identical to
// quant/'s reference conversions; results the same for any thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;

// f32 ops are a few roundings per element (rope: float angles, ~1e-5 at positions < 300).
constexpr double kFloatOpNmse = 1e-10;
constexpr double kRopeNmse = 1e-9;

class OpsVariants : public ::testing::TestWithParam<KernelVariant> {
  protected:
    void SetUp() override {
        if (!kernel_variant_supported(GetParam())) GTEST_SKIP() << "CPU lacks this variant";
        force_ = std::make_unique<test::ScopedKernelVariant>(GetParam());
    }
    void TearDown() override { force_.reset(); }
    std::unique_ptr<test::ScopedKernelVariant> force_;
};

std::vector<float> values(const HostTensor& h) {
    return std::vector<float>(h.f32(), h.f32() + h.size());
}

TEST_P(OpsVariants, RmsNormAtOddSizesAnyThreads) {
    for (int64_t cols : {80, 127, 8197}) {
        const HostTensor x = test::random_f32({cols, 5}, -3.0f, 3.0f);
        const HostTensor w = test::random_f32({cols}, 0.5f, 2.0f);
        std::vector<double> ref(static_cast<size_t>(cols * 5));
        for (int64_t r = 0; r < 5; ++r) {
            double ss = 0.0;
            for (int64_t i = 0; i < cols; ++i)
                ss += double(x.f32()[r * cols + i]) * x.f32()[r * cols + i];
            const double inv = 1.0 / std::sqrt(ss / cols + 1e-6);
            for (int64_t i = 0; i < cols; ++i)
                ref[r * cols + i] = x.f32()[r * cols + i] * inv * w.f32()[i];
        }
        std::vector<float> first;
        for (int threads : {1, 3}) {
            CpuBackend backend(threads);
            HostTensor y(GgmlType::F32, {cols, 5});
            backend.rms_norm(x.t, &w.t, 1e-6f, y.t);
            EXPECT_LE(test::nmse(ref, y.f32(), ref.size()), kFloatOpNmse) << cols;
            if (first.empty()) first = values(y);
            EXPECT_EQ(first, values(y)) << cols << " threads " << threads;
        }
    }
}

TEST_P(OpsVariants, RopeBothStylesWithFreqFactors) {
    CpuBackend backend(2);
    for (int64_t head_dim : {64, 80, 128, 256}) {
        for (int64_t n_rot : {head_dim, head_dim / 2 + 2}) {
            for (RopeStyle style : {RopeStyle::Norm, RopeStyle::Neox}) {
                std::vector<float> factors(static_cast<size_t>(n_rot / 2));
                test::fill_uniform(factors.data(), n_rot / 2, 1.0f, 8.0f);
                RopeParams p;
                p.n_rot = static_cast<int>(n_rot);
                p.freq_base = 500000.0f;
                p.style = style;
                p.freq_factors = factors.data();
                const int64_t n_heads = 3, n_tokens = 4;
                const int32_t pos[4] = {0, 7, 100, 255};
                HostTensor x = test::random_f32({head_dim, n_heads, n_tokens});
                const HostTensor x0 = x;
                backend.rope(x.t, pos, p);
                std::vector<double> ref(static_cast<size_t>(x.size()));
                const int64_t half = n_rot / 2;
                for (int64_t r = 0; r < n_heads * n_tokens; ++r) {
                    const float* a = x0.f32() + r * head_dim;
                    double* o = ref.data() + r * head_dim;
                    for (int64_t i = 0; i < head_dim; ++i)
                        o[i] = a[i];
                    for (int64_t i = 0; i < half; ++i) {
                        const double theta = pos[r / n_heads] *
                                             std::pow(500000.0, -2.0 * double(i) / double(n_rot)) /
                                             factors[i];
                        const int64_t i0 = style == RopeStyle::Neox ? i : 2 * i;
                        const int64_t i1 = style == RopeStyle::Neox ? i + half : 2 * i + 1;
                        o[i0] = a[i0] * std::cos(theta) - a[i1] * std::sin(theta);
                        o[i1] = a[i0] * std::sin(theta) + a[i1] * std::cos(theta);
                    }
                }
                EXPECT_LE(test::nmse(ref, x.f32(), ref.size()), kRopeNmse)
                    << head_dim << "/" << n_rot << (style == RopeStyle::Neox ? " neox" : " norm");
            }
        }
    }
}

TEST_P(OpsVariants, GatedActivationsAndSoftcapAnyThreads) {
    const int64_t n_ff = 28672 + 13, rows = 3;
    const HostTensor g = test::random_f32({n_ff, rows}, -8.0f, 8.0f);
    const HostTensor u = test::random_f32({n_ff, rows});
    for (Activation act : {Activation::Silu, Activation::GeluTanh}) {
        std::vector<double> ref(static_cast<size_t>(g.size()));
        for (size_t i = 0; i < ref.size(); ++i) {
            const double x = g.f32()[i];
            const double a = act == Activation::Silu
                                 ? x / (1.0 + std::exp(-x))
                                 : 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * x *
                                                              (1.0 + 0.044715 * x * x)));
            ref[i] = a * u.f32()[i];
        }
        std::vector<float> first;
        for (int threads : {1, 2, 3}) {
            CpuBackend backend(threads);
            HostTensor y(GgmlType::F32, {n_ff, rows});
            backend.gated_activation(g.t, u.t, act, y.t);
            EXPECT_LE(test::nmse(ref, y.f32(), ref.size()), kFloatOpNmse);
            if (first.empty()) first = values(y);
            EXPECT_EQ(first, values(y)) << threads << " threads";
        }
    }
    CpuBackend backend(2);
    HostTensor x = test::random_f32({1001, 7}, -60.0f, 60.0f);
    const HostTensor x0 = x;
    backend.softcap(x.t, 30.0f);
    std::vector<double> ref(static_cast<size_t>(x.size()));
    for (size_t i = 0; i < ref.size(); ++i)
        ref[i] = 30.0 * std::tanh(x0.f32()[i] / 30.0);
    EXPECT_LE(test::nmse(ref, x.f32(), ref.size()), kFloatOpNmse);
}

TEST_P(OpsVariants, GetRowsAndKvStoreAreBitIdenticalToTheReference) {
    CpuBackend backend(2);
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
        const TypeTraits& traits = type_traits(type);
        const int64_t row = 160, n = 9;
        const HostTensor src = test::random_f32({row, n}, -4.0f, 4.0f);
        HostTensor cache(type, {row, n + 2});
        backend.kv_store(src.t, cache.t, 2);
        const uint64_t rb = cache.t.nb[1];
        std::vector<uint8_t> expect(rb);
        for (int64_t i = 0; i < n; ++i) {
            if (type == GgmlType::F32) {
                std::memcpy(expect.data(), src.f32() + i * row, rb);
            } else {
                traits.quantize(src.f32() + i * row, expect.data(), row);
            }
            EXPECT_EQ(0, std::memcmp(expect.data(), cache.bytes.data() + (2 + i) * rb, rb))
                << traits.name << " cell " << 2 + i;
        }
        const int32_t ids[4] = {10, 2, 5, 2};
        HostTensor out(GgmlType::F32, {row, 4});
        backend.get_rows(cache.t, ids, 4, out.t);
        std::vector<float> want(static_cast<size_t>(row));
        for (int i = 0; i < 4; ++i) {
            traits.dequantize(cache.bytes.data() + ids[i] * rb, want.data(), row);
            EXPECT_EQ(0, std::memcmp(want.data(), out.f32() + i * row, row * sizeof(float)))
                << traits.name << " id " << ids[i];
        }
    }
}

INSTANTIATE_TEST_SUITE_P(CpuBackend, OpsVariants,
                         ::testing::Values(KernelVariant::Scalar, KernelVariant::Avx2,
                                           KernelVariant::Avx512),
                         [](const auto& info) {
                             return std::string(kernel_variant_name(info.param));
                         });

}  // namespace
}  // namespace strata::cpu
