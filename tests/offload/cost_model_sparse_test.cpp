// Cost model with activation sparsity: the sparse FFN's reads at the active fraction, hot
// neurons' rows moved to the GPU at two copies per split layer, and the rule that decides where
// a neuron-major ffn_down copy is kept (offload/sparse_down.h).
#include "offload/cost_model.h"
#include "offload/sparse_down.h"

#include <gtest/gtest.h>

#include "tests/offload/placement_test_util.h"

namespace strata {
namespace {

using test::LlamaShape;
using test::laptop;
using test::make_llama_table;
using test::mid_shape;

// Activation sparsity: decode reads ffn_up at the active fraction (its type's rate) and the
// neuron-major ffn_down copy's bytes at the active fraction (at ffn_down's type rate); the gate
// stays dense and prefill FLOPs do not change.
TEST(CostModel, SparseFfnCountsUpAndDownAtTheActiveFraction) {
    const LlamaShape s = mid_shape();
    const TensorTable t = make_llama_table(s);
    const Placement p = test::whole_placement(t, Tier::Ram);
    CostParams dense;
    dense.overhead_s = 0;
    CostParams sparse = dense;
    sparse.ffn_active_fraction = 0.5;
    sparse.ffn_down_bytes_per_weight = 34.0 / 32.0;  // Q8_0
    const CostEstimate d = estimate(p, t, laptop(), dense);
    const CostEstimate e = estimate(p, t, laptop(), sparse);
    const double weights = static_cast<double>(s.n_embd) * static_cast<double>(s.n_ff);
    const double up = static_cast<double>(row_bytes(GgmlType::Q4_K, s.n_embd)) * static_cast<double>(s.n_ff);
    const double down = static_cast<double>(row_bytes(GgmlType::Q6_K, s.n_ff)) * static_cast<double>(s.n_embd);
    // Bytes over the profile's q4_K / q6_K rates, the sparse reads at the row kernels' share of
    // them at half active: the gather's and the accumulate's (the product floors depend on size:
    // excluded).
    const double saved = s.n_layer * ((up - 0.5 * up / kGatherRateShare) / 45e9 +
                                      (down - 0.5 * weights * 34.0 / 32.0 / kAccumulateRateShare) / 40e9);
    EXPECT_NEAR((d.cpu_s - d.fixed_s) - (e.cpu_s - e.fixed_s), saved, saved * 1e-6);
    EXPECT_NEAR(e.prefill_s_per_token, d.prefill_s_per_token, d.prefill_s_per_token * 1e-9);
    // A copy four times the bytes of ffn_down costs more than it saves at 90% active.
    sparse.ffn_active_fraction = 0.9;
    sparse.ffn_down_bytes_per_weight = 4.0;
    EXPECT_GT(estimate(p, t, laptop(), sparse).decode_s_per_token, d.decode_s_per_token);
    // Auto reads that layer's ffn_down whole instead: only the up rows are saved (at the gather's
    // share of the rate), so it is faster than dense, by exactly that.
    sparse.ffn_down_copy_auto = true;
    const CostEstimate a = estimate(p, t, laptop(), sparse);
    const double up_saved = s.n_layer * (1.0 - 0.9 / row_rate_share(kGatherRateShare, 0.9)) * up / 45e9;
    EXPECT_GT(up_saved, 0);
    EXPECT_NEAR((d.cpu_s - d.fixed_s) - (a.cpu_s - a.fixed_s), up_saved, up_saved * 1e-6);
    // ... and at 50% active the Q8_0 copy of this Q6_K ffn_down pays: Auto is the copy.
    sparse.ffn_active_fraction = 0.5;
    sparse.ffn_down_bytes_per_weight = 34.0 / 32.0;
    EXPECT_NEAR(estimate(p, t, laptop(), sparse).cpu_s, e.cpu_s, e.cpu_s * 1e-12);
    // No copy anywhere (--sparse-down whole): ffn_down is read whole, only the up rows save.
    sparse.ffn_down_bytes_per_weight = 0;
    const double half_up_saved = s.n_layer * (1.0 - 0.5 / kGatherRateShare) * up / 45e9;
    const CostEstimate whole = estimate(p, t, laptop(), sparse);
    EXPECT_NEAR((d.cpu_s - d.fixed_s) - (whole.cpu_s - whole.fixed_s), half_up_saved, half_up_saved * 1e-6);
}

// Hot neurons (CostParams::hot_cold): no hot neuron prices a layer as the sparse FFN at the cold
// fraction; a hot half moves its gate rows and its share of the active up and down rows off the
// CPU, at two copies per layer; all hot puts the whole FFN on the GPU (ffn_down as the Q8_0 hot
// copy's bytes at its type's GPU rate).
TEST(CostModel, HotNeuronsMoveTheirRowsToTheGpuAtTwoCopiesPerLayer) {
    const LlamaShape s = mid_shape();
    const TensorTable t = make_llama_table(s);
    const Placement p = test::whole_placement(t, Tier::Ram);
    CostParams sparse;
    sparse.overhead_s = 0;
    sparse.ffn_active_fraction = 0.5;
    sparse.ffn_down_bytes_per_weight = 34.0 / 32.0;
    const CostEstimate e = estimate(p, t, laptop(), sparse);
    CostParams cold = sparse;
    cold.hot_cold.assign(static_cast<size_t>(s.n_layer), HotColdCost{0, 0.5});
    const CostEstimate c = estimate(p, t, laptop(), cold);
    EXPECT_NEAR(c.decode_s_per_token, e.decode_s_per_token, e.decode_s_per_token * 1e-12);
    EXPECT_NEAR(c.prefill_s_per_token, e.prefill_s_per_token, e.prefill_s_per_token * 1e-12);
    EXPECT_EQ(c.transfers, e.transfers);

    const double weights = static_cast<double>(s.n_embd) * static_cast<double>(s.n_ff);
    const double gate = static_cast<double>(row_bytes(GgmlType::Q4_K, s.n_embd)) * static_cast<double>(s.n_ff);
    const double copy = weights * 34.0 / 32.0;
    // CPU seconds of one layer's FFN reads with `hot_share` of its neurons hot and the cold ones
    // active at f (up rows at the gather's share of q4_K's 45 GB/s, the copy's rows at the
    // accumulate's share of q6_K's 40).
    const auto cpu_ffn_s = [&](double hot_share, double f) {
        const double cold = 1.0 - hot_share;
        return cold * gate / 45e9 + cold * gate * f / row_rate_share(kGatherRateShare, f) / 45e9 +
               cold * copy * f / row_rate_share(kAccumulateRateShare, f) / 40e9;
    };
    CostParams half = sparse;
    half.hot_cold.assign(static_cast<size_t>(s.n_layer), HotColdCost{s.n_ff / 2, 0.3});
    const CostEstimate h = estimate(p, t, laptop(), half);
    const double saved = s.n_layer * (cpu_ffn_s(0, 0.5) - cpu_ffn_s(0.5, 0.3));
    EXPECT_NEAR((e.cpu_s - e.fixed_s) - (h.cpu_s - h.fixed_s), saved, saved * 1e-6);
    EXPECT_EQ(h.transfers, e.transfers + 2 * s.n_layer);
    EXPECT_LT(h.decode_s_per_token, e.decode_s_per_token);

    CostParams all = sparse;
    all.hot_cold.assign(static_cast<size_t>(s.n_layer), HotColdCost{s.n_ff, 0});
    const CostEstimate a = estimate(p, t, laptop(), all);
    const auto reads_s = [](const CostEstimate& x) { return x.cpu_s + x.gpu_s - x.fixed_s; };
    const double moved = s.n_layer * (cpu_ffn_s(0, 0.5) - (2 * gate / 200e9 + copy / 190e9));
    EXPECT_NEAR(reads_s(e) - reads_s(a), moved, moved * 1e-6);
    EXPECT_EQ(a.transfers, e.transfers + 2 * s.n_layer);
}

// The copy rule: a Q8_0 copy read at the active fraction against the source read whole, at the
// accumulate's share of the GEMV rate per byte (all of it in order at 1, random from half down).
TEST(SparseDown, AutoKeepsACopyWhereItReadsLessTimeThanTheWholeMatrix) {
    const SparseDownPolicy automatic;
    // Half active: the copy's 0.53 bytes per weight at 75% of the rate read like 0.71 whole ones.
    EXPECT_FALSE(keeps_neuron_major_copy(automatic, GgmlType::Q4_K, 0.5));  // against 0.56
    EXPECT_TRUE(keeps_neuron_major_copy(automatic, GgmlType::Q6_K, 0.5));   // against 0.82
    EXPECT_TRUE(keeps_neuron_major_copy(automatic, GgmlType::Q8_0, 0.5));
    EXPECT_TRUE(keeps_neuron_major_copy(automatic, GgmlType::Q4_K, 0.3));   // 0.32 / 0.75 = 0.43
    EXPECT_TRUE(keeps_neuron_major_copy(automatic, GgmlType::Q8_0, 0.8));   // 0.85 / 0.9 = 0.94 against 1.06
    EXPECT_FALSE(keeps_neuron_major_copy(automatic, GgmlType::Q4_K, 0.9));  // 0.96 / 0.95 against 0.56
    EXPECT_DOUBLE_EQ(row_rate_share(0.6, 1.0), 1.0);
    EXPECT_DOUBLE_EQ(row_rate_share(0.6, 0.5), 0.6);
    EXPECT_DOUBLE_EQ(row_rate_share(0.6, 0.1), 0.6);
    EXPECT_DOUBLE_EQ(row_rate_share(0.6, 0.75), 0.8);
    EXPECT_TRUE(keeps_neuron_major_copy(automatic, GgmlType::F16, 0.5));
    EXPECT_TRUE(keeps_neuron_major_copy(copy_every_layer(GgmlType::Q8_0), GgmlType::Q4_K, 0.9));
    EXPECT_FALSE(keeps_neuron_major_copy(SparseDownPolicy{SparseDownMode::Whole}, GgmlType::F16, 0.1));
}

}  // namespace
}  // namespace strata
