// Mixture-of-experts tables in the placement code: the cost model reads n_expert_used / n_expert
// of each 3-D expert tensor per decoded token (uniform routing), and the built-in placement
// puts every layer's router on the GPU before any layer's experts.
#include <gtest/gtest.h>

#include "offload/builtin_placement.h"
#include "offload/cost_model.h"
#include "tests/offload/placement_test_util.h"

namespace strata {
namespace {

constexpr int64_t kExperts = 8;

test::LlamaShape shape() {
    test::LlamaShape s;
    s.n_layer = 4;
    s.n_embd = 1024;
    s.n_ff = 512;  // per expert
    s.n_head = 8;
    s.n_head_kv = 2;
    s.n_vocab = 4096;
    return s;
}

TensorTable moe_table(int n_used) { return test::make_moe_table(shape(), kExperts, n_used); }

HardwareProfile profile() {
    HardwareProfile p;
    p.cpu_name = "test cpu";
    p.cpu_threads = 8;
    p.host_read_gbs = 60;
    p.cpu_gemv_gbs = {{"q4_K", 45}, {"q6_K", 40}, {"f32", 20}};
    p.disk_read_gbs = 3;
    return p;
}

TEST(MoePlacement, DecodeReadsTheUsedExpertsShare) {
    const test::LlamaShape s = shape();
    CostParams params;
    params.overhead_s = 0;
    const TensorTable all = moe_table(kExperts), two = moe_table(2);
    const CostEstimate a = estimate(test::whole_placement(all, Tier::Ram), all, profile(), params);
    const CostEstimate b = estimate(test::whole_placement(two, Tier::Ram), two, profile(), params);
    // Per layer, 8 experts of gate+up (q4_K) and down (q6_K); top-2 reads 2 of them.
    const double gate_up = 2.0 * static_cast<double>(row_bytes(GgmlType::Q4_K, s.n_embd)) * static_cast<double>(s.n_ff);
    const double down = static_cast<double>(row_bytes(GgmlType::Q6_K, s.n_ff)) * static_cast<double>(s.n_embd);
    const double saved = static_cast<double>(s.n_layer) * (kExperts - 2) * (gate_up / 45e9 + down / 40e9);
    EXPECT_NEAR((a.cpu_s - a.fixed_s) - (b.cpu_s - b.fixed_s), saved, saved * 1e-6);
    EXPECT_NEAR(a.prefill_s_per_token, b.prefill_s_per_token, a.prefill_s_per_token * 1e-9);
}

TEST(MoePlacement, BuiltinPutsEveryRouterOnTheGpuBeforeExperts) {
    const TensorTable t = moe_table(2);
    uint64_t attn_and_small = 0, experts_one_layer = 0;
    for (const TensorEntry& e : t.tensors) {
        if (e.ne[2] > 1) {
            if (e.name.rfind("blk.0.", 0) == 0) experts_one_layer += e.bytes;
        } else if (e.name != "token_embd.weight") {
            attn_and_small += e.bytes;
        }
    }
    BuiltinPlacementParams params;
    params.n_ctx = 256;
    uint64_t kv = 0;
    for (int il = 0; il < t.n_layer; ++il) kv += kv_bytes_per_layer(t, il, params.n_ctx, params.kv_type);
    // Room for everything but token_embd, plus the KV caches and about 1.5 layers of experts.
    params.budgets.gpu_bytes = attn_and_small + kv + experts_one_layer * 3 / 2;
    params.budgets.ram_bytes = 8ull << 30;
    const Placement p = builtin_placement(t, params);
    for (int il = 0; il < t.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        EXPECT_EQ(p.tier_of(b + "ffn_gate_inp.weight"), Tier::Gpu) << il;
        EXPECT_EQ(p.tier_of(b + "attn_q.weight"), Tier::Gpu) << il;
    }
    EXPECT_EQ(p.tier_of("blk.0.ffn_down_exps.weight"), Tier::Gpu);
    EXPECT_EQ(p.tier_of("blk.3.ffn_down_exps.weight"), Tier::Ram);
}

}  // namespace
}  // namespace strata
