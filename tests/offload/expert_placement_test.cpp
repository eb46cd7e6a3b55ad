// Experts as placement units (placement.h ExpertTiers): the file round trip and its refusals,
// bytes per tier, the cost model's per-expert terms (bytes x expected selections per token) and
// the planner filling the GPU with the most used experts within its budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

#include "engine/core/error.h"
#include "offload/cost_model.h"
#include "offload/placement_file.h"
#include "offload/planner.h"
#include "tests/offload/placement_test_util.h"

namespace strata {
namespace {

constexpr int64_t kExperts = 16;
constexpr int kUsed = 2;

test::LlamaShape shape() {
    test::LlamaShape s;
    s.n_layer = 4;
    s.n_embd = 1024;
    s.n_ff = 512;  // per expert
    s.n_head = 8;
    s.n_head_kv = 2;
    s.n_vocab = 2048;
    return s;
}

TensorTable table() { return test::make_moe_table(shape(), kExperts, kUsed); }

HardwareProfile machine() {
    HardwareProfile p;
    p.cpu_name = "test cpu";
    p.cpu_threads = 8;
    p.host_read_gbs = 60;
    p.cpu_gemv_gbs = {{"q4_K", 45}, {"q6_K", 40}, {"f32", 20}};
    p.disk_read_gbs = 3;
    p.gpu_name = "test gpu";
    p.gpu_read_gbs = 250;
    p.gpu_gemv_gbs = {{"q4_K", 200}, {"q6_K", 190}, {"f32", 150}};
    p.h2d_gbs = 12;
    p.d2h_gbs = 12;
    p.transfer_latency_us = 2;
    return p;
}

// Skewed routing: per layer a random order of experts with Zipf-like weights, scaled to sum
// kUsed, each at most 1.
std::vector<std::vector<double>> skewed_use(uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::vector<double>> use;
    for (int l = 0; l < shape().n_layer; ++l) {
        std::vector<int> order(kExperts);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<double> u(kExperts);
        double sum = 0;
        for (int64_t r = 0; r < kExperts; ++r) sum += u[static_cast<size_t>(order[static_cast<size_t>(r)])] = 1.0 / static_cast<double>(r + 2);
        for (double& v : u) v *= kUsed / sum;
        use.push_back(u);
    }
    return use;
}

// Every tensor whole on RAM, KV on RAM; layer 1's experts one by one as `tiers`.
Placement per_expert(const TensorTable& t, const std::vector<Tier>& tiers) {
    Placement p = test::whole_placement(t, Tier::Ram);
    std::erase_if(p.tensors, [](const TensorPlacement& x) { return x.name.rfind("blk.1.", 0) == 0 && x.name.find("_exps") != std::string::npos; });
    p.expert_tiers.push_back({1, tiers});
    return p;
}

std::vector<Tier> mixed_tiers() {
    std::vector<Tier> tiers(kExperts, Tier::Ram);
    for (int64_t e = 0; e < kExperts; e += 3) tiers[static_cast<size_t>(e)] = Tier::Gpu;
    tiers[1] = Tier::Disk;
    return tiers;
}

TEST(ExpertPlacement, FileRoundTripsAndBytesAddUp) {
    const TensorTable t = table();
    const Placement p = per_expert(t, mixed_tiers());
    check_placement(p, t, {});
    const Placement back = placement_from_json(placement_to_json(p, &t));
    ASSERT_EQ(back.expert_tiers.size(), 1u);
    EXPECT_EQ(back.expert_tiers[0].layer, 1);
    EXPECT_EQ(back.expert_tiers[0].tiers, mixed_tiers());
    ASSERT_NE(back.experts_of(1), nullptr);
    EXPECT_EQ(back.experts_of(0), nullptr);
    EXPECT_EQ(back.tensors.size(), p.tensors.size());
    check_placement(back, t, {});

    // Layer 1's expert bytes, from the table: 6 GPU experts, 1 DISK, 9 RAM of 16.
    uint64_t layer1 = 0, total = 0;
    for (const TensorEntry& e : t.tensors) {
        total += e.bytes;
        if (e.name.rfind("blk.1.", 0) == 0 && e.name.find("_exps") != std::string::npos) layer1 += e.bytes;
    }
    const TierBytes b = placement_bytes(back, t);
    EXPECT_EQ(b.gpu, layer1 / kExperts * 6);
    EXPECT_EQ(b.disk, layer1 / kExperts);
    EXPECT_EQ(b.gpu + b.ram + b.disk, total);
    // A placement without expert tiers writes no such field (older readers keep working).
    EXPECT_EQ(placement_to_json(test::whole_placement(t, Tier::Ram)).find("expert_tiers"), std::string::npos);
}

TEST(ExpertPlacement, RefusesInconsistentExpertTiers) {
    const TensorTable t = table();
    const auto refuses = [&](const Placement& p, const std::string& says) {
        try {
            check_placement(p, t, {});
            ADD_FAILURE() << "accepted; expected an error saying " << says;
        } catch (const FormatError& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    Placement short_list = per_expert(t, std::vector<Tier>(kExperts - 1, Tier::Ram));
    refuses(short_list, "name 15 experts; the layer has 16");
    Placement twice = per_expert(t, mixed_tiers());
    twice.tensors.push_back({"blk.1.ffn_up_exps.weight", Tier::Ram});
    refuses(twice, "'blk.1.ffn_up_exps.weight' is also listed whole");
    Placement out_of_range = per_expert(t, mixed_tiers());
    out_of_range.expert_tiers[0].layer = 9;
    refuses(out_of_range, "expert tiers for layer 9; the model has layers 0..3");
    Placement dense = test::whole_placement(test::make_llama_table(shape()), Tier::Ram);
    dense.expert_tiers.push_back({0, std::vector<Tier>(kExperts, Tier::Ram)});
    try {
        check_placement(dense, test::make_llama_table(shape()), {});
        ADD_FAILURE() << "accepted expert tiers on a dense layer";
    } catch (const FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("no ffn_gate_exps"), std::string::npos) << e.what();
    }
    EXPECT_THROW(placement_from_json(R"({"schema_version":1})"), FormatError);
}

// Decode seconds of layer 1's experts, per expert tier list, from the cost model's layout.
CostEstimate estimate_with(const TensorTable& t, const std::vector<Tier>& tiers) {
    CostParams params;
    params.overhead_s = 0;
    const HardwareProfile hw = machine();  // the cost model keeps a reference
    const CostModel cm(t, hw, params);
    Layout l = cm.layout_of(test::whole_placement(t, Tier::Ram));
    l.experts.resize(static_cast<size_t>(t.n_layer));
    l.experts[1] = tiers;
    return cm.estimate(l);
}

TEST(ExpertPlacement, PerExpertCostIsBytesTimesExpectedSelections) {
    TensorTable t = table();
    t.expert_use = skewed_use(7);
    CostParams params;
    params.overhead_s = 0;
    const HardwareProfile hw = machine();
    const CostModel cm(t, hw, params);
    const CostEstimate whole = cm.estimate(cm.layout_of(test::whole_placement(t, Tier::Ram)));
    // All RAM, one by one: the same bytes per token as the whole tensors (the uses sum to k).
    const CostEstimate ram = estimate_with(t, std::vector<Tier>(kExperts, Tier::Ram));
    EXPECT_NEAR(ram.cpu_s, whole.cpu_s, whole.cpu_s * 1e-9);

    // The two most and the two least used experts of layer 1 on the GPU.
    const std::vector<double>& u = t.expert_use[1];
    std::vector<int> order(kExperts);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return u[static_cast<size_t>(a)] > u[static_cast<size_t>(b)]; });
    std::vector<Tier> hot(kExperts, Tier::Ram), cold(kExperts, Tier::Ram);
    hot[static_cast<size_t>(order[0])] = hot[static_cast<size_t>(order[1])] = Tier::Gpu;
    cold[static_cast<size_t>(order[kExperts - 1])] = cold[static_cast<size_t>(order[kExperts - 2])] = Tier::Gpu;
    const double du = u[static_cast<size_t>(order[0])] + u[static_cast<size_t>(order[1])] -
                      u[static_cast<size_t>(order[kExperts - 1])] - u[static_cast<size_t>(order[kExperts - 2])];
    // The GPU's experts run while the CPU computes its own (the longer part counts: the CPU's
    // here), so per selection moved the CPU no longer reads that expert's gate/up (q4_K) and
    // down (q6_K), and the step's copy of the input in and the sum out (2 us + 4 KiB at 12 GB/s
    // each) happen that much more often (the chance of a GPU expert, below 1 here).
    const test::LlamaShape s = shape();
    const double gate_up = 2.0 * static_cast<double>(row_bytes(GgmlType::Q4_K, s.n_embd)) * static_cast<double>(s.n_ff);
    const double down = static_cast<double>(row_bytes(GgmlType::Q6_K, s.n_ff)) * static_cast<double>(s.n_embd);
    const double per_use = gate_up / 45e9 + down / 40e9 - 2 * (2e-6 + 4.0 * 1024 / 12e9);
    const CostEstimate h = estimate_with(t, hot), c = estimate_with(t, cold);
    EXPECT_NEAR(c.decode_s_per_token - h.decode_s_per_token, du * per_use, std::abs(du * per_use) * 1e-6);
}

// Everything on the GPU: each MoE layer routes there (one op, no host part), so a decode step
// is one graph (graph overhead, no copies per layer) and the CPU does nothing. One expert of layer 1 in
// RAM brings the host back: routing there, the logits, the input and the sum copied, the
// eager step's overhead; that decode is slower by more than the expert's own bytes.
TEST(ExpertPlacement, AllOnTheGpuRoutesOnTheGpuAsOneGraph) {
    TensorTable t = table();
    CostParams params;
    params.overhead_s = 1e-3;
    params.graph_overhead_s = 1e-4;
    const HardwareProfile hw = machine();
    const CostModel cm(t, hw, params);
    Placement p = test::whole_placement(t, Tier::Gpu);
    p.kv.assign(static_cast<size_t>(t.n_layer), Tier::Gpu);
    Layout gpu = cm.layout_of(p);
    const CostEstimate all = cm.estimate(gpu);
    EXPECT_DOUBLE_EQ(all.overhead_s, params.graph_overhead_s);
    EXPECT_EQ(all.cpu_s, 0.0);
    gpu.experts.resize(static_cast<size_t>(t.n_layer));
    gpu.experts[1] = std::vector<Tier>(kExperts, Tier::Gpu);
    gpu.experts[1][3] = Tier::Ram;
    const CostEstimate one_off = cm.estimate(gpu);
    EXPECT_GE(one_off.transfers, all.transfers + 3);  // the router's logits and the input out, the sum back
    EXPECT_DOUBLE_EQ(one_off.overhead_s, params.overhead_s);
    EXPECT_GT(one_off.decode_s_per_token, all.decode_s_per_token + params.overhead_s - params.graph_overhead_s);
}

TEST(ExpertPlacement, PlannerFillsTheGpuWithTheMostUsedExpertsWithinBudget) {
    TensorTable t = table();
    t.expert_use = skewed_use(11);
    uint64_t dense = 0, experts = 0;
    for (const TensorEntry& e : t.tensors) (e.ne[2] > 1 ? experts : dense) += e.bytes;
    PlannerParams params;
    params.n_ctx = 512;
    uint64_t kv = 0;
    for (int l = 0; l < t.n_layer; ++l) kv += kv_bytes_per_layer(t, l, params.n_ctx, params.kv_type);
    // Room for every dense weight and KV cache, plus a third of the experts.
    params.budgets.gpu_bytes = dense + kv + experts / 3;
    params.budgets.ram_bytes = 4ull << 30;
    PlanReport report;
    const Placement p = plan_placement(t, machine(), params, &report);
    check_placement(p, t, {});
    const TierBytes b = placement_bytes(p, t);
    uint64_t kv_gpu = 0;
    for (int l = 0; l < t.n_layer; ++l)
        if (p.kv[static_cast<size_t>(l)] == Tier::Gpu) kv_gpu += kv_bytes_per_layer(t, l, params.n_ctx, params.kv_type);
    EXPECT_LE(b.gpu + kv_gpu, params.budgets.gpu_bytes);
    EXPECT_GT(b.gpu, dense / 2);  // the GPU is used, and mostly full
    EXPECT_GT(b.gpu + kv_gpu, params.budgets.gpu_bytes * 9 / 10);
    ASSERT_FALSE(p.expert_tiers.empty());
    for (const ExpertTiers& x : p.expert_tiers) {
        const std::vector<double>& u = t.expert_use[static_cast<size_t>(x.layer)];
        double min_gpu = 1e9, max_off = 0;
        for (size_t e = 0; e < x.tiers.size(); ++e) {
            if (x.tiers[e] == Tier::Gpu) {
                min_gpu = std::min(min_gpu, u[e]);
            } else {
                max_off = std::max(max_off, u[e]);
            }
        }
        EXPECT_GE(min_gpu, max_off) << "layer " << x.layer << ": a less used expert took a more used one's place";
    }
    for (int l = 0; l < t.n_layer; ++l) EXPECT_EQ(p.tier_of(cat("blk.", l, ".attn_q.weight")), Tier::Gpu) << l;
    // Better than every whole-tensor candidate the planner weighed.
    EXPECT_EQ(report.chosen, "greedy");
    EXPECT_LT(report.estimate.decode_s_per_token, report.whole_layers.decode_s_per_token);
}

// Qwen3-30B-A3B's shape (48 layers of 128 experts of 768, top-8; attention widths as n_embd/n_head
// gives them) at a 6 GiB GPU: the planner places experts one by one in well under a second, holds
// the budget, and predicts a faster decode than whole layers; a skewed routing makes it faster still.
TEST(ExpertPlacement, Qwen3MoeShapeAtSixGib) {
    test::LlamaShape s;
    s.n_layer = 48;
    s.n_embd = 2048;
    s.n_ff = 768;
    s.n_head = 32;
    s.n_head_kv = 4;
    s.n_vocab = 151936;
    TensorTable t = test::make_moe_table(s, 128, 8);
    HardwareProfile hw = machine();
    hw.transfer_latency_us = 10;
    PlannerParams params;
    params.n_ctx = 4096;
    params.budgets = {6ull << 30, 32ull << 30};
    PlanReport uniform, skewed;
    const auto t0 = std::chrono::steady_clock::now();
    const Placement p = plan_placement(t, hw, params, &uniform);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check_placement(p, t, {});
    EXPECT_LE(placement_bytes(p, t).gpu, params.budgets.gpu_bytes);
    EXPECT_LT(seconds, 5.0);
    EXPECT_LT(uniform.estimate.decode_s_per_token, uniform.whole_layers.decode_s_per_token);
    std::mt19937 rng(3);
    for (int l = 0; l < s.n_layer; ++l) {  // Zipf 0.5 in a random order per layer, scaled to top-8
        std::vector<double> u(128);
        std::vector<int> order(128);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        double sum = 0;
        for (int r = 0; r < 128; ++r) sum += u[static_cast<size_t>(order[static_cast<size_t>(r)])] = 1 / std::sqrt(r + 1.0);
        for (double& v : u) v *= 8 / sum;
        t.expert_use.push_back(u);
    }
    const Placement q = plan_placement(t, hw, params, &skewed);
    check_placement(q, t, {});
    EXPECT_LT(skewed.estimate.decode_s_per_token, uniform.estimate.decode_s_per_token);
    std::printf("qwen3-30b-a3b shape, 6 GiB: decode %.1f tok/s (uniform routing, %zu layers per expert, planned in %.2f s), "
                "%.1f tok/s (skewed), whole layers %.1f tok/s, built-in %.1f tok/s\n",
                1 / uniform.estimate.decode_s_per_token, p.expert_tiers.size(), seconds, 1 / skewed.estimate.decode_s_per_token,
                1 / uniform.whole_layers.decode_s_per_token,
                uniform.builtin.decode_s_per_token > 0 ? 1 / uniform.builtin.decode_s_per_token : 0.0);
}

}  // namespace
}  // namespace strata
