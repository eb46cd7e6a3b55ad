// Placement rules (-ngl, -ot): parsed strictly, and obeyed by both placers, which still place
// what the rules leave open (a budget that holds the whole model puts the rest on the GPU).
#include "offload/placement_rules.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "offload/builtin_placement.h"
#include "offload/planner.h"
#include "tests/offload/placement_test_util.h"

namespace strata {
namespace {

constexpr uint64_t kGiB = 1ull << 30;

HardwareProfile small_machine() {
    HardwareProfile p;
    p.cpu_name = "test cpu";
    p.cpu_threads = 4;
    p.host_read_gbs = 30;
    p.cpu_gemv_gbs = {{"q4_K", 20}, {"q6_K", 18}};
    p.disk_read_gbs = 2;
    p.gpu_name = "test gpu";
    p.gpu_read_gbs = 300;
    p.gpu_gemv_gbs = {{"q4_K", 250}, {"q6_K", 240}};
    p.h2d_gbs = 12;
    p.d2h_gbs = 12;
    p.transfer_latency_us = 15;
    p.cpu_prefill_gflops = 200;
    p.gpu_prefill_gflops = 10000;
    return p;
}

TensorTable four_layers() {
    test::LlamaShape s;
    s.n_layer = 4;
    return test::make_llama_table(s);
}

// Both placers, the whole model fitting the GPU budget.
std::vector<Placement> place_both(const TensorTable& t, const PlacementRules& rules, uint64_t gpu = kGiB) {
    BuiltinPlacementParams bp;
    bp.budgets = {gpu, kGiB};
    bp.n_ctx = 256;
    bp.rules = rules;
    PlannerParams pp;
    pp.budgets = bp.budgets;
    pp.n_ctx = bp.n_ctx;
    pp.rules = rules;
    return {builtin_placement(t, bp), plan_placement(t, small_machine(), pp)};
}

bool on_gpu(const Placement& p, const std::string& name) { return p.tier_of(name) == Tier::Gpu; }

TEST(PlacementRules, ParsesDevices) {
    const std::vector<TensorRule> r = parse_tensor_rules("blk\\.[0-9]+\\.ffn_.*=CPU,attn_q=cuda0,output=GPU");
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].pattern, "blk\\.[0-9]+\\.ffn_.*");
    EXPECT_FALSE(r[0].on_gpu);
    EXPECT_TRUE(r[1].on_gpu);
    EXPECT_TRUE(r[2].on_gpu);
    EXPECT_THROW(parse_tensor_rules("ffn_up"), ArgumentError);
    EXPECT_THROW(parse_tensor_rules("ffn_up=TPU"), ArgumentError);
    EXPECT_THROW(parse_tensor_rules("=CPU"), ArgumentError);
    PlacementRules bad;
    bad.tensors = {{"ffn_(", false}};
    EXPECT_THROW(resolve_rules(four_layers(), bad), ArgumentError);
    PlacementRules split;
    split.tensors = parse_tensor_rules("ffn_up=GPU,ffn_down=CPU");
    EXPECT_THROW(resolve_rules(four_layers(), split), ArgumentError);
}

TEST(PlacementRules, GpuLayersLimitsTheGpu) {
    const TensorTable t = four_layers();
    for (const Placement& free : place_both(t, {})) {
        EXPECT_TRUE(on_gpu(free, "blk.3.ffn_down.weight"));  // without -ngl the GPU takes it all
    }
    PlacementRules rules;
    rules.gpu_layers = 2;
    for (const Placement& p : place_both(t, rules)) {
        check_placement(p, t, {});
        EXPECT_TRUE(on_gpu(p, "blk.0.attn_q.weight"));
        EXPECT_TRUE(on_gpu(p, "blk.1.ffn_up.weight"));
        for (const TensorPlacement& tp : p.tensors) {
            if (tensor_layer(tp.name) >= 2 || tensor_layer(tp.name) < 0) {
                EXPECT_NE(tp.tier, Tier::Gpu) << tp.name;
            }
        }
        EXPECT_TRUE(p.ffn_splits.empty());
        EXPECT_EQ(p.kv[0], Tier::Gpu);
        EXPECT_EQ(p.kv[2], Tier::Ram);
        EXPECT_EQ(p.kv[3], Tier::Ram);
    }
    rules.gpu_layers = 5;  // past the last layer: the output matrix may go too (the built-in order takes it)
    EXPECT_TRUE(on_gpu(place_both(t, rules)[0], "output.weight"));
    rules.gpu_layers = 0;
    for (const Placement& p : place_both(t, rules)) EXPECT_EQ(placement_bytes(p, t).gpu, 0u);
}

TEST(PlacementRules, OverrideTensorsOffAndOnTheGpu) {
    const TensorTable t = four_layers();
    PlacementRules off;
    off.tensors = parse_tensor_rules("ffn_(gate|up|down)=CPU");
    const std::vector<Placement> both = place_both(t, off);
    for (const Placement& p : both) {
        for (int l = 0; l < 4; ++l) {
            EXPECT_FALSE(on_gpu(p, cat("blk.", l, ".ffn_gate.weight")));
            EXPECT_EQ(p.ffn_split(l), nullptr);
        }
    }
    // The built-in order still fills the GPU with the rest (the planner weighs the transfers a
    // GPU attention beside a CPU FFN costs, and may keep it off).
    for (int l = 0; l < 4; ++l) EXPECT_TRUE(on_gpu(both[0], cat("blk.", l, ".attn_k.weight")));
    // -ngl 0 with one layer's FFN on the GPU by name: only those three tensors there.
    PlacementRules on;
    on.gpu_layers = 0;
    on.tensors = parse_tensor_rules("blk\\.3\\.ffn_up=CUDA0");
    for (const Placement& p : place_both(t, on)) {
        for (const char* w : {"ffn_gate", "ffn_up", "ffn_down"}) EXPECT_TRUE(on_gpu(p, cat("blk.3.", w, ".weight")));
        const std::optional<FfnTensors> f = find_ffn_tensors(t, 3);
        EXPECT_EQ(placement_bytes(p, t).gpu, ffn_slice_bytes(*f, 0, f->n_ff));
    }
    EXPECT_THROW(place_both(t, on, 64 * 1024), BudgetError);  // the pinned FFN does not fit
}

}  // namespace
}  // namespace strata
