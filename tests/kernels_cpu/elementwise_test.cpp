// rms_norm, add, scale, softcap and gated_activation of the CPU backend against double
// references on random inputs at odd sizes, including in-place use and per-head views.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;

constexpr double kFloatOpNmse = 1e-10;

// Reference RMSNorm of rows of `cols` elements read from x with a row stride.
std::vector<double> reference_rms_norm(const float* x, int64_t cols, int64_t rows,
                                       int64_t row_stride, const float* w, float eps) {
    std::vector<double> y(static_cast<size_t>(cols * rows));
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * row_stride;
        double ss = 0.0;
        for (int64_t i = 0; i < cols; ++i)
            ss += static_cast<double>(xr[i]) * xr[i];
        const double inv = 1.0 / std::sqrt(ss / cols + eps);
        for (int64_t i = 0; i < cols; ++i)
            y[r * cols + i] = xr[i] * inv * (w ? w[i] : 1.0);
    }
    return y;
}

TEST(CpuRmsNorm, WithAndWithoutWeightAtOddSizes) {
    CpuBackend backend(2);
    for (int64_t cols : {7, 33, 640}) {
        for (int64_t rows : {1, 3, 17}) {
            const HostTensor x = test::random_f32({cols, rows}, -3.0f, 3.0f);
            const HostTensor w = test::random_f32({cols}, 0.5f, 2.0f);
            for (const Tensor* weight : {&w.t, static_cast<const Tensor*>(nullptr)}) {
                HostTensor y(GgmlType::F32, {cols, rows});
                backend.rms_norm(x.t, weight, 1e-6f, y.t);
                const auto ref = reference_rms_norm(x.f32(), cols, rows, cols,
                                                    weight ? w.f32() : nullptr, 1e-6f);
                EXPECT_LE(test::nmse(ref, y.f32(), ref.size()), kFloatOpNmse)
                    << cols << "x" << rows << (weight ? " weighted" : "");
            }
        }
    }
}

TEST(CpuRmsNorm, InPlacePerHeadViewOfAFusedBuffer) {
    // q [head_dim, n_head, n_tokens] lives in the first part of each token's qkv row.
    const int64_t head_dim = 16, n_head = 3, n_tokens = 5, row = head_dim * n_head + 40;
    HostTensor qkv = test::random_f32({row, n_tokens}, -2.0f, 2.0f);
    const HostTensor before = qkv;
    const HostTensor w = test::random_f32({head_dim}, 0.5f, 2.0f);
    Tensor q = qkv.t;
    q.ne = {head_dim, n_head, n_tokens, 1};
    q.nb = {4, head_dim * 4, static_cast<uint64_t>(row) * 4,
            static_cast<uint64_t>(row * n_tokens) * 4};
    CpuBackend(2).rms_norm(q, &w.t, 1e-5f, q);
    for (int64_t t = 0; t < n_tokens; ++t) {
        const auto ref =
            reference_rms_norm(before.f32() + t * row, head_dim, n_head, head_dim, w.f32(), 1e-5f);
        EXPECT_LE(test::nmse(ref, qkv.f32() + t * row, ref.size()), kFloatOpNmse) << t;
        for (int64_t i = head_dim * n_head; i < row; ++i) {
            EXPECT_EQ(before.f32()[t * row + i], qkv.f32()[t * row + i]) << "k/v part changed";
        }
    }
}

TEST(CpuAdd, SameShapeBroadcastAndInPlace) {
    CpuBackend backend(2);
    const int64_t cols = 33, rows = 7;
    const HostTensor a = test::random_f32({cols, rows});
    const HostTensor b = test::random_f32({cols, rows});
    const HostTensor bias = test::random_f32({cols});
    HostTensor y(GgmlType::F32, {cols, rows});
    backend.add(a.t, b.t, y.t);
    std::vector<double> ref(cols * rows);
    for (int64_t i = 0; i < cols * rows; ++i)
        ref[i] = double(a.f32()[i]) + b.f32()[i];
    EXPECT_LE(test::nmse(ref, y.f32(), ref.size()), kFloatOpNmse);

    HostTensor acc = a;
    backend.add(acc.t, bias.t, acc.t);  // in place, one row broadcast
    for (int64_t i = 0; i < cols * rows; ++i)
        ref[i] = double(a.f32()[i]) + bias.f32()[i % cols];
    EXPECT_LE(test::nmse(ref, acc.f32(), ref.size()), kFloatOpNmse);

    const HostTensor wrong = test::random_f32({cols, 2});
    EXPECT_THROW(backend.add(a.t, wrong.t, y.t), ArgumentError);
}

TEST(CpuScaleSoftcap, MatchFormulas) {
    CpuBackend backend(2);
    HostTensor x = test::random_f32({33, 17}, -40.0f, 40.0f);
    const HostTensor x0 = x;
    backend.scale(x.t, 0.37f);
    std::vector<double> ref(x.size());
    for (int64_t i = 0; i < x.size(); ++i)
        ref[i] = x0.f32()[i] * 0.37;
    EXPECT_LE(test::nmse(ref, x.f32(), ref.size()), kFloatOpNmse);

    HostTensor y = x0;
    backend.softcap(y.t, 30.0f);
    for (int64_t i = 0; i < y.size(); ++i)
        ref[i] = 30.0 * std::tanh(x0.f32()[i] / 30.0);
    EXPECT_LE(test::nmse(ref, y.f32(), ref.size()), kFloatOpNmse);
    EXPECT_THROW(backend.softcap(y.t, 0.0f), ArgumentError);
}

double reference_act(Activation act, double g) {
    if (act == Activation::Silu) return g / (1.0 + std::exp(-g));
    const double c = std::sqrt(2.0 / M_PI);
    return 0.5 * g * (1.0 + std::tanh(c * (g + 0.044715 * g * g * g)));
}

TEST(CpuGatedActivation, SiluAndGeluTanh) {
    CpuBackend backend(2);
    for (Activation act : {Activation::Silu, Activation::GeluTanh}) {
        for (int64_t n_ff : {7, 33, 3000}) {
            for (int64_t n : {1, 5}) {
                const HostTensor gate = test::random_f32({n_ff, n}, -8.0f, 8.0f);
                const HostTensor up = test::random_f32({n_ff, n}, -2.0f, 2.0f);
                HostTensor y(GgmlType::F32, {n_ff, n});
                backend.gated_activation(gate.t, up.t, act, y.t);
                std::vector<double> ref(y.size());
                for (int64_t i = 0; i < y.size(); ++i) {
                    ref[i] = reference_act(act, gate.f32()[i]) * up.f32()[i];
                }
                EXPECT_LE(test::nmse(ref, y.f32(), ref.size()), kFloatOpNmse)
                    << (act == Activation::Silu ? "silu" : "gelu") << " " << n_ff << "x" << n;
            }
        }
    }
}

// A mixture's per-token sum of (token, expert) rows: against a double-precision sum, at sizes
// above and below the threading threshold, with empty columns and a row used twice.
TEST(CpuCombineRows, WeightedSumsOfGatheredRows) {
    CpuBackend backend(2);
    for (int64_t ne0 : {7, 2048}) {
        const int64_t n = 40, r = 64;
        const HostTensor x = test::random_f32({ne0, r}, -3.0f, 3.0f);
        std::vector<int32_t> offsets{0}, rows;
        std::vector<float> weights;
        for (int64_t t = 0; t < n; ++t) {
            for (int64_t j = 0; j < (t * 7) % 5; ++j) {
                rows.push_back(static_cast<int32_t>((t * 13 + j * 29) % r));
                weights.push_back(static_cast<float>(j + 1) / static_cast<float>(t + 2));
            }
            if (t == 3) {  // the same row twice in one column
                rows.push_back(rows.back());
                weights.push_back(-0.5f);
            }
            offsets.push_back(static_cast<int32_t>(rows.size()));
        }
        HostTensor y(GgmlType::F32, {ne0, n});
        std::fill(y.f32(), y.f32() + y.size(), std::nanf(""));  // every element must be written
        backend.combine_rows(x.t, {offsets.data(), rows.data(), weights.data()}, y.t);
        std::vector<double> ref(static_cast<size_t>(ne0 * n), 0.0);
        for (int64_t t = 0; t < n; ++t)
            for (int32_t j = offsets[t]; j < offsets[t + 1]; ++j)
                for (int64_t i = 0; i < ne0; ++i) ref[t * ne0 + i] += static_cast<double>(weights[j]) * x.f32()[rows[j] * ne0 + i];
        EXPECT_LE(test::nmse(ref, y.f32(), ref.size()), kFloatOpNmse) << ne0;
        for (int64_t t : {0, 5}) EXPECT_EQ(y.f32()[t * ne0 + ne0 - 1], 0.0f) << "empty column " << t;
    }
}

TEST(CpuCombineRows, RejectsBadArguments) {
    CpuBackend backend(1);
    HostTensor x = test::random_f32({8, 4});
    HostTensor y(GgmlType::F32, {8, 2});
    const int32_t rows[] = {0, 3, 1};
    const float w[] = {1.0f, 2.0f, 3.0f};
    const int32_t good[] = {0, 2, 3};
    EXPECT_NO_THROW(backend.combine_rows(x.t, {good, rows, w}, y.t));
    const int32_t decreasing[] = {0, 2, 1};
    EXPECT_THROW(backend.combine_rows(x.t, {decreasing, rows, w}, y.t), ArgumentError);
    const int32_t not_zero[] = {1, 2, 3};
    EXPECT_THROW(backend.combine_rows(x.t, {not_zero, rows, w}, y.t), ArgumentError);
    const int32_t out_of_range[] = {0, 4, 1};
    EXPECT_THROW(backend.combine_rows(x.t, {good, out_of_range, w}, y.t), ArgumentError);
    EXPECT_THROW(backend.combine_rows(x.t, {nullptr, rows, w}, y.t), ArgumentError);
    EXPECT_THROW(backend.combine_rows(x.t, {good, nullptr, w}, y.t), ArgumentError);
    HostTensor wide(GgmlType::F32, {9, 2});
    EXPECT_THROW(backend.combine_rows(x.t, {good, rows, w}, wide.t), ArgumentError);
    Tensor alias = x.t.rows(0, 2);
    EXPECT_THROW(backend.combine_rows(x.t, {good, rows, w}, alias), ArgumentError);
    HostTensor f16(GgmlType::F16, {8, 4});
    EXPECT_THROW(backend.combine_rows(f16.t, {good, rows, w}, y.t), ArgumentError);
}

TEST(CpuElementwise, RejectsNonF32AndBadThreads) {
    CpuBackend backend(1);
    HostTensor h(GgmlType::F16, {32, 2});
    EXPECT_THROW(backend.scale(h.t, 2.0f), ArgumentError);
    EXPECT_THROW(CpuBackend(-1), ArgumentError);
    EXPECT_GE(CpuBackend(0).n_threads(), 1);
    EXPECT_EQ(backend.memory_kind(), MemoryKind::Host);
}

}  // namespace
}  // namespace strata::cpu
