// The sparse FFN kernels against the dense ops with the same mask, on random inputs, for every
// type the real models use and every kernel variant this CPU runs: gathered rows equal the
// dense matmul's rows bit for bit; the row accumulate matches a double reference over quant/'s
// dequantized rows; the whole sparse FFN matches dense gate/up/down with the mask applied.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "kernels_cpu/ops.h"
#include "kernels_cpu/predicted_ffn.h"
#include "kernels_cpu/sparse_rows.h"
#include "test_util.h"

namespace strata::cpu {
namespace {

using test::HostTensor;
using test::random_f32;
using test::random_weights;

std::vector<KernelVariant> variants() {
    std::vector<KernelVariant> out;
    for (KernelVariant v : {KernelVariant::Dequant, KernelVariant::Scalar, KernelVariant::Avx2, KernelVariant::Avx512})
        if (kernel_variant_supported(v)) out.push_back(v);
    return out;
}

// About a third of [0, n), in increasing order, never empty.
std::vector<int32_t> random_rows(int64_t n) {
    std::vector<int32_t> rows;
    for (int64_t i = 0; i < n; ++i)
        if (test::rng()() % 3 == 0) rows.push_back(static_cast<int32_t>(i));
    if (rows.empty()) rows.push_back(static_cast<int32_t>(n / 2));
    return rows;
}

// Column i of down as row i, Q8_0 from the dequantized values (the neuron-major copy).
HostTensor neuron_major_q8(const HostTensor& down, int64_t n_embd, int64_t n_ff) {
    const std::vector<float> df = test::dequantized(down.t);
    HostTensor down_t(GgmlType::Q8_0, {n_embd, n_ff});
    std::vector<float> col(static_cast<size_t>(n_embd));
    for (int64_t i = 0; i < n_ff; ++i) {
        for (int64_t e = 0; e < n_embd; ++e) col[static_cast<size_t>(e)] = df[static_cast<size_t>(e * n_ff + i)];
        type_traits(GgmlType::Q8_0).quantize(col.data(), static_cast<uint8_t*>(down_t.t.data) + i * down_t.t.nb[1], n_embd);
    }
    return down_t;
}

class SparseRows : public ::testing::TestWithParam<GgmlType> {};

TEST_P(SparseRows, GatheredRowsEqualTheDenseMatmulRows) {
    const GgmlType type = GetParam();
    const int64_t k = 512, n = 301;
    const HostTensor w = random_weights(type, k, n);
    const HostTensor x = random_f32({k, 1});
    const std::vector<int32_t> rows = random_rows(n);
    std::vector<double> magnitude;  // Σ|w·x| per row: the scale of a summation-order difference
    test::reference_matmul(w.t, x, &magnitude);
    for (KernelVariant v : variants()) {
        test::ScopedKernelVariant scoped(v);
        HostTensor dense(GgmlType::F32, {n, 1});
        matmul(w.t, x.t, dense.t, 2, v != KernelVariant::Dequant);
        for (int threads : {1, 2}) {
            std::vector<float> y(rows.size(), NAN);
            gather_matvec(w.t, x.f32(), rows.data(), static_cast<int64_t>(rows.size()), y.data(), threads);
            for (size_t j = 0; j < rows.size(); ++j) {
                const float d = dense.f32()[rows[j]];
                // The f32 path dots one row where matmul dots four at once: a summation order
                // apart, a few roundings of the row's Σ|w·x| (|d| alone may be near 0).
                EXPECT_NEAR(y[j], d, (find_qdot_kernel(type, v) ? 0.0 : 2e-6 * magnitude[rows[j]]))
                    << kernel_variant_name(v) << " row " << rows[j] << " threads " << threads;
            }
        }
    }
}

TEST_P(SparseRows, AccumulateMatchesADoubleReferenceOverDequantizedRows) {
    const GgmlType type = GetParam();
    const int64_t k = 768;
    // 97 neurons: about 32 active rows, one group; 1,201: about 400, several groups of rows
    // summed apart and then added (sparse_rows.cpp), which must not depend on the thread count.
    for (const int64_t n : {int64_t{97}, int64_t{1201}}) {
        const HostTensor w = random_weights(type, k, n);
        const std::vector<float> wf = test::dequantized(w.t);
        const std::vector<int32_t> rows = random_rows(n);
        std::vector<float> coef(rows.size());
        test::fill_uniform(coef.data(), static_cast<int64_t>(coef.size()));
        std::vector<double> ref(static_cast<size_t>(k), 0.0), mag(static_cast<size_t>(k), 0.0);
        for (size_t j = 0; j < rows.size(); ++j)
            for (int64_t e = 0; e < k; ++e) {
                const double t = static_cast<double>(coef[j]) * wf[static_cast<size_t>(rows[j] * k + e)];
                ref[static_cast<size_t>(e)] += t;
                mag[static_cast<size_t>(e)] += std::fabs(t);
            }
        for (KernelVariant v : variants()) {
            test::ScopedKernelVariant scoped(v);
            std::vector<float> y1(static_cast<size_t>(k), NAN);
            accumulate_rows(w.t, coef.data(), rows.data(), static_cast<int64_t>(rows.size()), y1.data(), 1);
            for (int64_t e = 0; e < k; ++e) {
                const size_t i = static_cast<size_t>(e);
                ASSERT_NEAR(y1[i], ref[i], 1e-6 * mag[i] + 1e-7) << kernel_variant_name(v) << " element " << e << " n " << n;
            }
            for (int threads : {2, 3, 16}) {
                std::vector<float> y2(static_cast<size_t>(k), NAN);
                accumulate_rows(w.t, coef.data(), rows.data(), static_cast<int64_t>(rows.size()), y2.data(), threads);
                for (int64_t e = 0; e < k; ++e)
                    ASSERT_EQ(y1[static_cast<size_t>(e)], y2[static_cast<size_t>(e)])
                        << threads << " threads changed element " << e << " (" << kernel_variant_name(v) << ", n " << n << ")";
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, SparseRows,
                         ::testing::Values(GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0,
                                           GgmlType::F16, GgmlType::F32, GgmlType::Q4_0));

// Dense FFN with the mask: act(gate) ⊙ up where |act(gate)| > t, then down · that.
TEST(SparseFfn, MatchesTheDenseOpsWithTheSameMask) {
    const int64_t n_embd = 256, n_ff = 704, n = 3;
    for (Activation act : {Activation::Silu, Activation::GeluTanh}) {
        const HostTensor gate_w = random_weights(GgmlType::Q4_K, n_embd, n_ff);
        const HostTensor up = random_weights(GgmlType::Q6_K, n_embd, n_ff);
        const HostTensor down_t = neuron_major_q8(random_weights(GgmlType::Q8_0, n_ff, n_embd), n_embd, n_ff);
        const HostTensor x = random_f32({n_embd, n});
        HostTensor gate(GgmlType::F32, {n_ff, n}), upx(GgmlType::F32, {n_ff, n}), h(GgmlType::F32, {n_ff, n});
        matmul(gate_w.t, x.t, gate.t, 2);
        matmul(up.t, x.t, upx.t, 2);
        const float threshold = 0.35f;
        const int64_t kept = thresholded_gated_activation(gate.t, upx.t, act, threshold, h.t, 2);
        EXPECT_GT(kept, n * n_ff / 10);
        EXPECT_LT(kept, n * n_ff * 9 / 10);
        // Reference: down_t rows (the same Q8_0 values) weighted by the masked h, in double.
        const std::vector<float> dtf = test::dequantized(down_t.t);
        HostTensor y(GgmlType::F32, {n_embd, n});
        SparseFfnArgs args{&gate.t, &x.t, &up.t, &down_t.t, act, threshold};
        EXPECT_EQ(sparse_gated_ffn(args, y.t, 2), kept);
        for (int64_t t = 0; t < n; ++t)
            for (int64_t e = 0; e < n_embd; ++e) {
                double ref = 0, mag = 0;
                for (int64_t i = 0; i < n_ff; ++i) {
                    const double v = static_cast<double>(h.f32()[t * n_ff + i]) * dtf[static_cast<size_t>(i * n_embd + e)];
                    ref += v;
                    mag += std::fabs(v);
                }
                ASSERT_NEAR(y.f32()[t * n_embd + e], ref, 1e-5 * mag + 1e-6) << "token " << t << " element " << e;
            }
    }
}

// The active up rows alone (ffn_down read whole by the caller): the masked activations equal the
// dense thresholded activation's, element for element (the gathered rows are the dense rows).
TEST(SparseGatedActivation, EqualsTheDenseThresholdedActivation) {
    const int64_t n_embd = 256, n_ff = 704, n = 2;
    for (GgmlType up_type : {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0}) {
        const HostTensor gate_w = random_weights(GgmlType::Q4_K, n_embd, n_ff);
        const HostTensor up = random_weights(up_type, n_embd, n_ff);
        const HostTensor x = random_f32({n_embd, n});
        HostTensor gate(GgmlType::F32, {n_ff, n}), upx(GgmlType::F32, {n_ff, n}), dense(GgmlType::F32, {n_ff, n});
        matmul(gate_w.t, x.t, gate.t, 2);
        matmul(up.t, x.t, upx.t, 2);
        const float threshold = 0.35f;
        const int64_t kept = thresholded_gated_activation(gate.t, upx.t, Activation::Silu, threshold, dense.t, 2);
        ASSERT_GT(kept, n * n_ff / 10);
        ASSERT_LT(kept, n * n_ff * 9 / 10);
        HostTensor h(GgmlType::F32, {n_ff, n});
        std::fill(h.f32(), h.f32() + n * n_ff, 7.0f);  // every element is written
        uint64_t counts[2] = {5, 5};
        SparseFfnArgs args{&gate.t, &x.t, &up.t, nullptr, Activation::Silu, threshold, counts};
        EXPECT_EQ(sparse_gated_activation(args, h.t, 2), kept);
        EXPECT_EQ(counts[0], 5u + static_cast<uint64_t>(n * n_ff));
        EXPECT_EQ(counts[1], 5u + static_cast<uint64_t>(kept));
        for (int64_t i = 0; i < n * n_ff; ++i) ASSERT_EQ(h.f32()[i], dense.f32()[i]) << type_traits(up_type).name << " " << i;
    }
    const HostTensor up = random_weights(GgmlType::Q8_0, 64, 96);
    const HostTensor gate = random_f32({96, 1}), x = random_f32({64, 1});
    HostTensor wrong(GgmlType::F32, {64, 1});
    SparseFfnArgs args{&gate.t, &x.t, &up.t, nullptr, Activation::Silu, 0.1f};
    EXPECT_THROW(sparse_gated_activation(args, wrong.t, 1), ArgumentError);
}

// A predictor that names every neuron: exactly CATS (the gathered gate rows are the dense rows).
TEST(PredictedSparseFfn, AllCandidatesEqualCatsExactly) {
    const int64_t n_embd = 256, n_ff = 704;
    const HostTensor gate_w = random_weights(GgmlType::Q4_K, n_embd, n_ff);
    const HostTensor up = random_weights(GgmlType::Q6_K, n_embd, n_ff);
    const HostTensor down_t = neuron_major_q8(random_weights(GgmlType::Q8_0, n_ff, n_embd), n_embd, n_ff);
    const HostTensor x = random_f32({n_embd, 1});
    HostTensor gate(GgmlType::F32, {n_ff, 1}), y_cats(GgmlType::F32, {n_embd, 1}), y(GgmlType::F32, {n_embd, 1});
    matmul(gate_w.t, x.t, gate.t, 2);
    std::vector<int32_t> all(static_cast<size_t>(n_ff));
    std::iota(all.begin(), all.end(), 0);
    for (Activation act : {Activation::Silu, Activation::GeluTanh}) {
        const SparseFfnArgs cats{&gate.t, &x.t, &up.t, &down_t.t, act, 0.3f};
        const int64_t kept = sparse_gated_ffn(cats, y_cats.t, 2);
        uint64_t counts[2] = {0, 0};
        const PredictedFfnArgs args{&x.t, &gate_w.t, &up.t, &down_t.t, all.data(), n_ff, act, 0.3f, counts};
        EXPECT_EQ(predicted_sparse_gated_ffn(args, y.t, 2), kept);
        EXPECT_EQ(counts[0], static_cast<uint64_t>(n_ff));
        EXPECT_EQ(counts[1], static_cast<uint64_t>(kept));
        for (int64_t e = 0; e < n_embd; ++e) ASSERT_EQ(y.f32()[e], y_cats.f32()[e]) << "element " << e;
    }
}

// Random candidates: CATS restricted to them, against a double reference over the dequantized
// weights (the f32 activation path, so no neuron sits within rounding of the threshold).
TEST(PredictedSparseFfn, EqualsCatsRestrictedToTheCandidates) {
    const int64_t n_embd = 256, n_ff = 544;
    const HostTensor gate_w = random_weights(GgmlType::Q8_0, n_embd, n_ff);
    const HostTensor up = random_weights(GgmlType::Q5_K, n_embd, n_ff);
    const HostTensor down_t = neuron_major_q8(random_weights(GgmlType::Q8_0, n_ff, n_embd), n_embd, n_ff);
    const HostTensor x = random_f32({n_embd, 1});
    const std::vector<float> gf = test::dequantized(gate_w.t), uf = test::dequantized(up.t), df = test::dequantized(down_t.t);
    const std::vector<int32_t> cand = random_rows(n_ff);
    const float threshold = 0.2f;
    std::vector<double> h(static_cast<size_t>(n_ff), 0.0);
    int64_t ref_kept = 0;
    for (int32_t i : cand) {
        double g = 0, u = 0;
        for (int64_t e = 0; e < n_embd; ++e) {
            g += static_cast<double>(gf[static_cast<size_t>(i * n_embd + e)]) * x.f32()[e];
            u += static_cast<double>(uf[static_cast<size_t>(i * n_embd + e)]) * x.f32()[e];
        }
        const double a = g / (1.0 + std::exp(-g));  // SiLU
        if (std::fabs(a) <= threshold) continue;
        h[static_cast<size_t>(i)] = a * u;
        ++ref_kept;
    }
    EXPECT_GT(ref_kept, static_cast<int64_t>(cand.size()) / 10);
    EXPECT_LT(ref_kept, static_cast<int64_t>(cand.size()) * 9 / 10);
    HostTensor y(GgmlType::F32, {n_embd, 1});
    const PredictedFfnArgs args{&x.t, &gate_w.t, &up.t, &down_t.t, cand.data(), static_cast<int64_t>(cand.size()),
                                Activation::Silu, threshold};
    EXPECT_EQ(predicted_sparse_gated_ffn(args, y.t, 2, /*quantize_activations=*/false), ref_kept);
    for (int64_t e = 0; e < n_embd; ++e) {
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < n_ff; ++i) {
            const double v = h[static_cast<size_t>(i)] * df[static_cast<size_t>(i * n_embd + e)];
            ref += v;
            mag += std::fabs(v);
        }
        ASSERT_NEAR(y.f32()[e], ref, 1e-5 * mag + 1e-6) << "element " << e;
    }
}

TEST(PredictedSparseFfn, RefusesBadCandidates) {
    const HostTensor w = random_weights(GgmlType::Q8_0, 64, 96);
    const HostTensor x = random_f32({64, 1});
    HostTensor y(GgmlType::F32, {64, 1});
    for (const std::vector<int32_t>& bad : {std::vector<int32_t>{3, 3}, std::vector<int32_t>{5, 2}, std::vector<int32_t>{96}}) {
        const PredictedFfnArgs args{&x.t, &w.t, &w.t, &w.t, bad.data(), static_cast<int64_t>(bad.size()), Activation::Silu, 0.1f};
        EXPECT_THROW(predicted_sparse_gated_ffn(args, y.t, 1), ArgumentError);
    }
    const HostTensor x2 = random_f32({64, 2});
    const int32_t one = 0;
    const PredictedFfnArgs two_tokens{&x2.t, &w.t, &w.t, &w.t, &one, 1, Activation::Silu, 0.1f};
    HostTensor y2(GgmlType::F32, {64, 2});
    EXPECT_THROW(predicted_sparse_gated_ffn(two_tokens, y2.t, 1), ArgumentError);
}

// TEAL's input mask: the values at or below the threshold become zero, the others stay bit for
// bit, and the count is of those kept; rows beyond one and thread counts change nothing.
TEST(MaskSmallValues, ZeroesWhatIsAtOrBelowTheThresholdAndCountsTheRest) {
    for (int n_threads : {1, 3}) {
        HostTensor x = random_f32({1000, 70});
        x.f32()[5] = 0.25f;  // exactly at the threshold: zeroed
        x.f32()[6] = -0.25f;
        const std::vector<float> before(x.f32(), x.f32() + 70000);
        const int64_t kept = mask_small_values(x.t, 0.25f, n_threads);
        int64_t expect_kept = 0;
        for (size_t i = 0; i < before.size(); ++i) {
            const bool on = std::fabs(before[i]) > 0.25f;
            expect_kept += on;
            ASSERT_EQ(x.f32()[i], on ? before[i] : 0.0f) << "element " << i;
        }
        EXPECT_EQ(kept, expect_kept);
        EXPECT_GT(kept, 0);
        EXPECT_LT(kept, 70000);
    }
    HostTensor x = random_f32({64, 2});
    EXPECT_EQ(mask_small_values(x.t, -1.0f, 1), 128);  // a negative threshold keeps every value
}

TEST(SparseFfn, RefusesMismatchedShapes) {
    const HostTensor up = random_weights(GgmlType::Q8_0, 64, 96);
    const HostTensor down_t = random_weights(GgmlType::Q8_0, 64, 95);
    const HostTensor gate = random_f32({96, 1}), x = random_f32({64, 1});
    HostTensor y(GgmlType::F32, {64, 1});
    SparseFfnArgs args{&gate.t, &x.t, &up.t, &down_t.t, Activation::Silu, 0.1f};
    EXPECT_THROW(sparse_gated_ffn(args, y.t, 1), ArgumentError);
}

}  // namespace
}  // namespace strata::cpu
