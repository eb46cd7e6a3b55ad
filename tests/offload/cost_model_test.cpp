// Cost model: properties any placement model must have (more on the faster processor is never
// slower, disk-bound decode is disk bytes / disk bandwidth, a split FFN overlaps its parts),
// the transfers the executor makes, and that fit() recovers known coefficients.
#include "offload/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/core/error.h"
#include "tests/offload/placement_test_util.h"

namespace strata {
namespace {

using test::LlamaShape;
using test::make_llama_table;
using test::mid_shape;

using test::laptop;

bool must_stay(const std::string& name, const TensorTable& t) {
    for (const TensorEntry& e : t.tensors) {
        if (e.name == name) return e.ne[1] == 1 || name == "token_embd.weight" || name == "output.weight";
    }
    return false;
}

// Layers [0, k) whole on the GPU with their KV; the rest on `rest` (must-stay tensors in RAM).
Placement first_layers(const TensorTable& t, int k, Tier rest) {
    Placement p = test::whole_placement(t, rest);
    for (TensorPlacement& tp : p.tensors) {
        const int layer = tensor_layer(tp.name);
        if (layer >= 0 && layer < k) {
            tp.tier = Tier::Gpu;
        } else if (must_stay(tp.name, t)) {
            tp.tier = Tier::Ram;
        }
    }
    for (int l = 0; l < k; ++l) p.kv[static_cast<size_t>(l)] = Tier::Gpu;
    return p;
}

void set_tier(Placement& p, const std::string& name, Tier tier) {
    for (TensorPlacement& tp : p.tensors) {
        if (tp.name == name) tp.tier = tier;
    }
}

TEST(CostModel, MoreLayersOnTheGpuNeverSlower) {
    const TensorTable t = make_llama_table(mid_shape());
    const CostParams params;
    double last = 1e30, last_prefill = 1e30;
    for (int k = 0; k <= t.n_layer; ++k) {
        const CostEstimate e = estimate(first_layers(t, k, Tier::Ram), t, laptop(), params);
        EXPECT_LE(e.decode_s_per_token, last) << "k = " << k;
        EXPECT_LE(e.prefill_s_per_token, last_prefill) << "k = " << k;
        EXPECT_GT(e.prefill_s_per_token, 0);
        last = e.decode_s_per_token;
        last_prefill = e.prefill_s_per_token;
    }
    Placement all = first_layers(t, t.n_layer, Tier::Ram);
    set_tier(all, "output.weight", Tier::Gpu);
    EXPECT_LT(estimate(all, t, laptop(), params).decode_s_per_token, last);
}

TEST(CostModel, EachFfnOrAttentionToGpuNeverSlower) {
    const TensorTable t = make_llama_table(mid_shape());
    const CostParams params;
    Placement p = first_layers(t, 0, Tier::Ram);
    double last = estimate(p, t, laptop(), params).decode_s_per_token;
    for (int l = 0; l < t.n_layer; ++l) {
        const std::string b = cat("blk.", l, ".");
        // Attention with its KV first, then the FFN: each step moves a whole block's home.
        for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output"}) set_tier(p, b + w + ".weight", Tier::Gpu);
        p.kv[static_cast<size_t>(l)] = Tier::Gpu;
        const double attn = estimate(p, t, laptop(), params).decode_s_per_token;
        EXPECT_LT(attn, last) << "layer " << l;
        for (const char* w : {"ffn_gate", "ffn_up", "ffn_down"}) set_tier(p, b + w + ".weight", Tier::Gpu);
        const double ffn = estimate(p, t, laptop(), params).decode_s_per_token;
        EXPECT_LT(ffn, attn) << "layer " << l;
        last = ffn;
    }
}

TEST(CostModel, RamNeverSlowerThanDisk) {
    const TensorTable t = make_llama_table(mid_shape());
    const CostParams params;
    const CostEstimate ram = estimate(first_layers(t, 2, Tier::Ram), t, laptop(), params);
    const CostEstimate disk = estimate(first_layers(t, 2, Tier::Disk), t, laptop(), params);
    EXPECT_LT(ram.decode_s_per_token, disk.decode_s_per_token);
    EXPECT_LE(ram.prefill_s_per_token, disk.prefill_s_per_token);  // disk hidden by compute
    EXPECT_EQ(ram.disk_s, 0);
    EXPECT_GT(disk.disk_s, 0);
}

TEST(CostModel, DiskBoundDecodeIsDiskBytesOverBandwidth) {
    const TensorTable t = make_llama_table(mid_shape());
    HardwareProfile slow = laptop();
    slow.disk_read_gbs = 0.05;
    const Placement p = first_layers(t, 0, Tier::Disk);
    const double disk_bytes = static_cast<double>(placement_bytes(p, t).disk);
    CostParams params;
    params.overhead_s = 0;
    const CostEstimate e = estimate(p, t, slow, params);
    const double expected = disk_bytes / (slow.disk_read_gbs * 1e9);
    EXPECT_NEAR(e.disk_s, expected, expected * 1e-9);
    EXPECT_NEAR(e.decode_s_per_token, expected, expected * 0.01);
    EXPECT_EQ(e.transfers, 0);
    // Compute-bound when the disk is fast: the disk time is hidden.
    HardwareProfile fast = laptop();
    fast.disk_read_gbs = 500;
    const CostEstimate f = estimate(p, t, fast, params);
    EXPECT_EQ(f.disk_exposed_s, 0);
    EXPECT_NEAR(f.decode_s_per_token, f.cpu_s + f.gpu_s + f.transfer_s, 1e-12);
}

TEST(CostModel, SplitFfnOverlapsItsParts) {
    const TensorTable t = make_llama_table(mid_shape());
    const CostParams params;
    Placement whole = first_layers(t, 0, Tier::Ram);
    const CostEstimate cpu_only = estimate(whole, t, laptop(), params);
    // Layer 0's FFN split at a quarter: its CPU part shrinks to 3/4 and the GPU part runs beside.
    Placement split = whole;
    std::erase_if(split.tensors, [](const TensorPlacement& tp) {
        return tp.name.rfind("blk.0.ffn_", 0) == 0 && tp.name != "blk.0.ffn_norm.weight";
    });
    const int64_t n_ff = mid_shape().n_ff;
    split.ffn_splits.push_back({0, n_ff / 4 / 256 * 256, n_ff});
    check_placement(split, t, {});
    const CostEstimate e = estimate(split, t, laptop(), params);
    EXPECT_LT(e.decode_s_per_token, cpu_only.decode_s_per_token);
    EXPECT_EQ(e.transfers, cpu_only.transfers + 2 + 2);  // residual in/out, input/partial sum
    const auto ffn = find_ffn_tensors(t, 0);
    const double ffn_cpu_s = static_cast<double>(ffn_slice_bytes(*ffn, 0, n_ff)) / 42e9;
    const double cut = static_cast<double>(split.ffn_splits[0].gpu_end) / static_cast<double>(n_ff);
    // The saved CPU time is about the GPU share of the FFN (rates between q4_K and q6_K).
    EXPECT_NEAR(cpu_only.cpu_s - e.cpu_s, ffn_cpu_s * cut, ffn_cpu_s * cut * 0.15);
    EXPECT_EQ(e.gpu_s, 0);  // the GPU part is hidden behind the longer CPU part
}

TEST(CostModel, TransfersFollowTheExecutor) {
    const TensorTable t = make_llama_table(mid_shape());
    const CostParams params;
    Placement p = first_layers(t, 0, Tier::Ram);
    EXPECT_EQ(estimate(p, t, laptop(), params).transfers, 0);
    // Attention (with KV) on the GPU, FFN on the CPU: the residual crosses twice per layer.
    for (int l = 0; l < t.n_layer; ++l) {
        for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
            set_tier(p, cat("blk.", l, ".", w, ".weight"), Tier::Gpu);
        }
        p.kv[static_cast<size_t>(l)] = Tier::Gpu;
    }
    EXPECT_EQ(estimate(p, t, laptop(), params).transfers, 2 * t.n_layer);
    // One weight off its block's home: its input there and output back.
    set_tier(p, "blk.2.attn_v.weight", Tier::Ram);
    EXPECT_EQ(estimate(p, t, laptop(), params).transfers, 2 * t.n_layer + 2);
    // The output matrix on the GPU after a CPU block: hidden in, logits out.
    set_tier(p, "output.weight", Tier::Gpu);
    EXPECT_EQ(estimate(p, t, laptop(), params).transfers, 2 * t.n_layer + 4);
    // Every projection of layer 3 in RAM under its GPU cache: the decode runs the block on the
    // CPU and sends q, k and v to the cache and the attention back (4), where the layer's FFN
    // is (no residual crossing), instead of the 2 crossings of a GPU block.
    for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output"}) set_tier(p, cat("blk.3.", w, ".weight"), Tier::Ram);
    const CostEstimate e = estimate(p, t, laptop(), params);
    EXPECT_EQ(e.transfers, 2 * t.n_layer + 4 - 2 + 4);
}

TEST(CostModel, LongerContextReadsMoreKv) {
    const TensorTable t = make_llama_table(mid_shape());
    CostParams short_ctx, long_ctx;
    short_ctx.n_ctx_used = 128;
    long_ctx.n_ctx_used = 8192;
    const Placement p = first_layers(t, 3, Tier::Ram);
    EXPECT_LT(estimate(p, t, laptop(), short_ctx).decode_s_per_token,
              estimate(p, t, laptop(), long_ctx).decode_s_per_token);
}

TEST(CostModel, SlidingWindowLayersReadOnlyTheirWindow) {
    const TensorTable full = make_llama_table(mid_shape());
    TensorTable swa = full;
    swa.attn_window.assign(static_cast<size_t>(swa.n_layer), 256);
    swa.attn_window.back() = 0;  // one full-attention layer
    CostParams long_ctx, short_ctx;
    long_ctx.n_ctx_used = 8192;
    short_ctx.n_ctx_used = 200;
    const Placement p = first_layers(full, 3, Tier::Ram);
    // Past the window a sliding layer reads 256 keys, not 8192; inside it the models agree.
    EXPECT_LT(estimate(p, swa, laptop(), long_ctx).decode_s_per_token,
              estimate(p, full, laptop(), long_ctx).decode_s_per_token);
    EXPECT_DOUBLE_EQ(estimate(p, swa, laptop(), short_ctx).decode_s_per_token,
                     estimate(p, full, laptop(), short_ctx).decode_s_per_token);
}

// A prompt pass on the CPU rates each product at its own width and type (the profile's grid):
// only ffn_down, the one product wider than 4096 inputs (5632), takes longer with a slower wide
// rate, by its FLOPs at the rate interpolated for its width; with q6_K measured at half q4_K's
// rate, the q6_K products take twice their time. Batches of 512 tokens: FLOPs bind, nothing
// shipped.
TEST(CostModel, CpuPrefillRatesEachProductAtItsWidthAndType) {
    const TensorTable t = make_llama_table(mid_shape());  // 2048 wide; ffn_down 5632
    CostParams params;
    params.n_prompt = 512;
    params.ship_slots = 0;
    params.overhead_s = 0;
    const Placement on_cpu = first_layers(t, 0, Tier::Ram);
    const HardwareProfile flat = laptop();  // cpu_prefill_gflops 300, no grid
    HardwareProfile wide_slow = laptop();
    wide_slow.cpu_prefill_grid.wide = 150;
    const double base = estimate(on_cpu, t, flat, params).prefill_s_per_token;
    const double down_flops = 2.0 * 2048 * 5632 * t.n_layer;
    const double f = std::log2(5632.0 / 4096.0) / std::log2(28672.0 / 4096.0);
    const double want = down_flops * (1.0 / ((300 - f * 150) * 1e9) - 1.0 / 300e9);
    EXPECT_NEAR(estimate(on_cpu, t, wide_slow, params).prefill_s_per_token - base, want, want * 1e-9);

    // attn_v and ffn_down are q6_K here, as in a Q4_K_M file (the output too, but a prompt pass
    // multiplies only its last token there).
    const LlamaShape s = mid_shape();
    const double v_flops = 2.0 * s.n_embd * (s.n_embd / s.n_head * s.n_head_kv) * t.n_layer;
    HardwareProfile q6_half = laptop();
    q6_half.cpu_prefill_grid.by_type["q6_K"] = 150;
    const double q6_extra = (down_flops + v_flops) / 300e9;
    EXPECT_NEAR(estimate(on_cpu, t, q6_half, params).prefill_s_per_token - base, q6_extra, q6_extra * 1e-9);
}

TEST(CostModel, RefusesWhatItCannotRate) {
    const TensorTable t = make_llama_table(mid_shape());
    HardwareProfile cpu_only = laptop();
    cpu_only.gpu_name.clear();
    EXPECT_THROW(estimate(first_layers(t, 1, Tier::Ram), t, cpu_only, {}), ArgumentError);
    EXPECT_NO_THROW(estimate(first_layers(t, 0, Tier::Ram), t, cpu_only, {}));
    HardwareProfile empty;
    EXPECT_THROW(estimate(first_layers(t, 0, Tier::Ram), t, empty, {}), ArgumentError);
    // No prefill rates: prefill not predicted.
    HardwareProfile no_prefill = laptop();
    no_prefill.cpu_prefill_gflops = 0;
    EXPECT_EQ(estimate(first_layers(t, 0, Tier::Ram), t, no_prefill, {}).prefill_s_per_token, 0);
}

TEST(CostModel, SmallOpsAndProductFloorsAreCounted) {
    const TensorTable t = make_llama_table(mid_shape());
    Placement all = first_layers(t, t.n_layer, Tier::Ram);
    set_tier(all, "output.weight", Tier::Gpu);
    CostParams params;
    params.overhead_s = 0;
    HardwareProfile free_ops = laptop();
    HardwareProfile costly = laptop();
    costly.gpu_op_us = 5;
    costly.gpu_gemv_floor_us = costly.gpu_gemv_tiny_floor_us = 4;
    costly.gpu_graph_node_us = 7;  // the token table stays on the host: no graph, not counted
    costly.cpu_op_us = 100;        // nothing runs on the CPU: must not count
    const CostEstimate a = estimate(all, t, free_ops, params);
    const CostEstimate b = estimate(all, t, costly, params);
    // Per layer on the GPU's fused ops (layer_ops.h): attention 4 (the prologue, the block's
    // end, the attention output's quantization, the attention) and FFN 2 (the activation, the
    // block's end), and 7 products; the output product. On the CPU the same blocks are 9 and 5
    // ops (layer_ops_test.cpp checks both counts).
    const double n = t.n_layer;
    const double kernels = n * (4 + 2 + 7) + 1;
    const double want = (n * (4 + 2) * 5 + (n * 7 + 1) * 4) * 1e-6;
    EXPECT_NEAR(b.gpu_s - a.gpu_s, want, want * 1e-9);
    EXPECT_NEAR(b.decode_s_per_token - a.decode_s_per_token, want, want * 1e-9);
    EXPECT_EQ(b.cpu_s, a.cpu_s);

    // Everything on the GPU: the step is a graph, each kernel costs the graph node's extra.
    set_tier(all, "token_embd.weight", Tier::Gpu);
    const CostEstimate g = estimate(all, t, costly, params);
    const CostEstimate g0 = estimate(all, t, free_ops, params);
    EXPECT_NEAR(g.gpu_s - g0.gpu_s, want + kernels * (7 - 5) * 1e-6, want * 1e-9);
    // A replayed node cheaper than an eager launch lowers each kernel's fixed cost by the
    // difference, never below the node itself. With 4 µs floors and a 2 µs node the node binds
    // (2 µs a kernel); with 10 µs floors the difference does (3 µs less a kernel).
    HardwareProfile replay = costly;
    replay.gpu_graph_node_us = 2;
    EXPECT_NEAR(estimate(all, t, replay, params).gpu_s - g0.gpu_s, kernels * 2e-6, want * 1e-9);
    HardwareProfile slow_floors = costly;
    slow_floors.gpu_gemv_floor_us = slow_floors.gpu_gemv_tiny_floor_us = 10;
    slow_floors.gpu_graph_node_us = slow_floors.gpu_op_us;  // a node as dear as an eager op: no change
    const double eager_like = estimate(all, t, slow_floors, params).gpu_s;
    slow_floors.gpu_graph_node_us = 2;
    EXPECT_NEAR(estimate(all, t, slow_floors, params).gpu_s - eager_like, -kernels * 3e-6, want * 1e-9);
    // A graph step pays the graph steps' overhead, an eager one (the token table on the host)
    // overhead_s; observe() says which the run was.
    CostParams two = params;
    two.overhead_s = 2e-3;
    two.graph_overhead_s = 5e-3;
    Placement eager = all;
    set_tier(eager, "token_embd.weight", Tier::Ram);
    EXPECT_EQ(estimate(all, t, costly, two).overhead_s, 5e-3);
    EXPECT_EQ(estimate(eager, t, costly, two).overhead_s, 2e-3);
    EXPECT_NEAR(estimate(all, t, costly, two).decode_s_per_token - g.decode_s_per_token,
                5e-3 - params.graph_overhead_s, 1e-12);
    EXPECT_TRUE(observe(all, t, costly, two, 0.01).graph);
    EXPECT_FALSE(observe(eager, t, costly, two, 0.01).graph);
    EXPECT_NEAR(predict_decode(two, observe(all, t, costly, two, 0.01)), estimate(all, t, costly, two).decode_s_per_token,
                1e-12);

    // The floor between its two measured sizes: the layers' matrices (2.4-6.5 MB) lie above
    // the 4.7 MB point or between the points, so a smaller tiny floor lowers the total.
    HardwareProfile tiny = costly;
    tiny.gpu_gemv_tiny_floor_us = 1;
    const double with_tiny = estimate(all, t, tiny, params).gpu_s;
    EXPECT_LT(with_tiny, g.gpu_s);
    EXPECT_GT(with_tiny, g.gpu_s - (n * 7 + 1) * 3e-6);
}

// The attention measured for this model's shape (on the line through its two points, the KV
// bytes included) takes the place of one small op and the KV bytes per layer; another shape's
// measurement is not used.
TEST(CostModel, AttentionOfTheModelsShapeReplacesASmallOp) {
    const TensorTable t = make_llama_table(mid_shape());
    Placement all = first_layers(t, t.n_layer, Tier::Ram);
    set_tier(all, "output.weight", Tier::Gpu);
    set_tier(all, "token_embd.weight", Tier::Gpu);
    CostParams params;
    params.overhead_s = 0;
    HardwareProfile costly = laptop();
    costly.gpu_op_us = 5;
    costly.gpu_gemv_floor_us = costly.gpu_gemv_tiny_floor_us = 4;
    costly.gpu_graph_node_us = 7;
    const double n = t.n_layer;
    const CostEstimate g = estimate(all, t, costly, params);
    TensorTable shaped = t;
    shaped.n_head = 16;
    shaped.n_head_kv = 4;
    shaped.head_dim = 128;
    HardwareProfile attn = costly;
    attn.gpu_attention_us = {{"16x4x128", 50}, {"32x8x128", 1000}};
    attn.gpu_attention_long_us = {{"16x4x128", 74}, {"32x8x128", 2000}};
    const double kv_cell_bytes = 2 * 4 * 128 * 2;  // K and V, 4 KV heads of 128, f16
    for (const int64_t cells : {16, 1024}) {
        CostParams at = params;
        at.n_ctx_used = cells;
        const double line_us = 50 + (74 - 50) / 240.0 * static_cast<double>(cells - 16);
        const double kv_read = kv_cell_bytes * static_cast<double>(cells) / 250e9;  // laptop gpu_read_gbs
        const double without = estimate(all, shaped, costly, at).gpu_s;
        EXPECT_NEAR(estimate(all, shaped, attn, at).gpu_s - without, n * ((line_us - 5) * 1e-6 - kv_read), 1e-9)
            << cells << " cells";
    }
    attn.gpu_attention_us = {{"32x8x128", 1000}};
    EXPECT_NEAR(estimate(all, shaped, attn, params).gpu_s, g.gpu_s, 1e-12);
}

TEST(CostModel, FitPullsTowardTheMeasuredPrior) {
    // Two runs whose GPU bytes and fixed GPU costs grow together: the two GPU scales cannot
    // be told apart from them. Without a prior any mix fits; with it, both share the change
    // evenly (their priors, the profile's, are both 1) instead of one going to 0.
    std::vector<Observation> obs;
    for (double g : {0.004, 0.008}) {
        Observation o{g, 0.001, 0, 0, 1.3 * 2 * g + 0.001};
        o.gpu_fixed_s = g;
        obs.push_back(o);
    }
    CostParams p;
    p.overhead_s = 0;
    fit(p, obs);
    EXPECT_NEAR(p.gpu_scale, 1.3, 0.05);
    EXPECT_NEAR(p.gpu_fixed_scale, 1.3, 0.05);
    EXPECT_NEAR(p.cpu_scale, 1.0, 0.1);
    EXPECT_NEAR(p.cpu_fixed_scale, 1.0, 1e-6);  // no run has CPU fixed costs: unmoved
}

TEST(CostModel, FitRecoversKnownCoefficients) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<double> u(0.001, 0.2);
    const double a = 1.35, b = 0.8, c = 1.1, d = 0.004, e = 0.6, f = 1.7, ts = 1.4, dg = 0.0015;
    std::vector<Observation> obs;
    for (int i = 0; i < 60; ++i) {
        Observation o{u(rng), u(rng), u(rng) * 3, u(rng) * 0.01, 0};
        o.gpu_fixed_s = u(rng) * 0.2;
        o.cpu_fixed_s = u(rng) * 0.2;
        o.graph = i % 3 == 0;  // a third of the steps ran as CUDA graphs: their own overhead
        // The model: compute and the disk stream overlap; the slower one sets the pace.
        const double compute = a * o.gpu_s + b * o.cpu_s + e * o.gpu_fixed_s + f * o.cpu_fixed_s;
        o.measured_s_per_token = ts * o.transfer_s + std::max(compute, c * o.disk_s) + (o.graph ? dg : d);
        obs.push_back(o);
    }
    CostParams p;
    fit(p, obs, /*prior_weight=*/0);
    EXPECT_NEAR(p.transfer_scale, ts, 1e-4);
    EXPECT_NEAR(p.graph_overhead_s, dg, 1e-6);
    EXPECT_NEAR(p.gpu_scale, a, 1e-4);
    EXPECT_NEAR(p.cpu_scale, b, 1e-4);
    EXPECT_NEAR(p.disk_scale, c, 1e-4);
    EXPECT_NEAR(p.overhead_s, d, 1e-6);
    EXPECT_NEAR(p.gpu_fixed_scale, e, 1e-4);
    EXPECT_NEAR(p.cpu_fixed_scale, f, 1e-4);
}

TEST(CostModel, FitKeepsCoefficientsNonNegativeAndUnexercisedOnes) {
    std::mt19937 rng(6);
    std::uniform_real_distribution<double> u(0.001, 0.2);
    std::normal_distribution<double> noise(0, 0.02);
    std::vector<Observation> obs;
    for (int i = 0; i < 30; ++i) {
        Observation o{u(rng), u(rng), 0, 0, 0};  // no disk in any run
        // GPU time does not matter at all here: its true coefficient is 0.
        o.measured_s_per_token = (1.2 * o.cpu_s + 0.002) * (1 + noise(rng));
        obs.push_back(o);
    }
    CostParams p;
    p.disk_scale = 1.7;
    fit(p, obs);
    EXPECT_GE(p.gpu_scale, 0);
    EXPECT_LT(p.gpu_scale, 0.1);
    EXPECT_NEAR(p.cpu_scale, 1.2, 0.05);
    EXPECT_DOUBLE_EQ(p.disk_scale, 1.7);
    EXPECT_GE(p.overhead_s, 0);

    // Observations from the model itself: the fitted model predicts them back.
    const TensorTable t = make_llama_table(mid_shape());
    CostParams truth;
    truth.cpu_scale = 1.25;
    truth.gpu_scale = 1.6;
    truth.overhead_s = 0.003;
    std::vector<Observation> runs;
    for (int k : {0, 2, 4, 6}) {
        const Placement pl = first_layers(t, k, Tier::Ram);
        runs.push_back(observe(pl, t, laptop(), {}, estimate(pl, t, laptop(), truth).decode_s_per_token));
    }
    CostParams fitted;
    fit(fitted, runs, /*prior_weight=*/0);  // four exact runs: nothing for a prior to add
    for (int k : {1, 3, 5}) {
        const Placement pl = first_layers(t, k, Tier::Ram);
        const double want = estimate(pl, t, laptop(), truth).decode_s_per_token;
        EXPECT_NEAR(estimate(pl, t, laptop(), fitted).decode_s_per_token, want, want * 1e-3);
    }
    EXPECT_THROW(fit(fitted, {}), ArgumentError);
    EXPECT_THROW(fit(fitted, {Observation{0.1, 0, 0, 0, -1}}), ArgumentError);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// Prompt batches ship host weights to the GPU: their bytes cross PCIe once per batch, at h2d_gbs
// when registered and h2d_staged_gbs otherwise (DISK weights always staged); with two staging
// slots the copies overlap the GPU's products (max), with one they add. Batches below
// ship_min_tokens stay on the CPU.
TEST(CostModel, PrefillShipsHostWeightsAsTheRuntimeDoes) {
    const TensorTable t = make_llama_table(mid_shape());
    const Placement ram = first_layers(t, 0, Tier::Ram);
    // Exact shipping time: every layer matrix (the output matrix computes one row: not shipped).
    double layer_bytes = 0;
    for (const TensorEntry& e : t.tensors) {
        if (e.ne[1] > 1 && e.name != "token_embd.weight" && e.name != "output.weight") layer_bytes += static_cast<double>(e.bytes);
    }
    HardwareProfile p = laptop();
    p.h2d_staged_gbs = p.h2d_gbs / 4;
    CostParams one, two;
    one.ship_slots = 1;
    two.ship_slots = 2;
    const double n = static_cast<double>(two.n_prompt);
    const double ship = layer_bytes / (p.h2d_gbs * 1e9 * n);
    const double e1 = estimate(ram, t, p, one).prefill_s_per_token;
    const double e2 = estimate(ram, t, p, two).prefill_s_per_token;
    // On the laptop (12 GB/s, 15 TFLOP/s) the GPU's products outlast the registered copies: two
    // slots hide ship_hidden of the copies under them, one pays both.
    EXPECT_NEAR(e1 - e2, two.ship_hidden * ship, ship * 1e-9);
    CostParams perfect = two;
    perfect.ship_hidden = 1.0;
    EXPECT_NEAR(e1 - estimate(ram, t, p, perfect).prefill_s_per_token, ship, ship * 1e-9);
    // Staged copies take 4x longer: one slot pays 3 more copies' time; with two they are now the
    // longer side, more than the registered time and less than one slot's.
    CostParams staged = two, staged_one = one;
    staged.ship_registered = staged_one.ship_registered = false;
    EXPECT_NEAR(estimate(ram, t, p, staged_one).prefill_s_per_token - e1, 3 * ship, 3 * ship * 1e-9);
    const double s2 = estimate(ram, t, p, staged).prefill_s_per_token;
    EXPECT_GT(s2, e2);
    EXPECT_LT(s2, e1 + 3 * ship);
    // A profile without the staged rate takes h2d_gbs for it.
    HardwareProfile old = p;
    old.h2d_staged_gbs = 0;
    EXPECT_DOUBLE_EQ(estimate(ram, t, old, staged).prefill_s_per_token, estimate(ram, t, old, two).prefill_s_per_token);
    // DISK weights are staged whether or not the RAM weights are registered.
    const Placement disk = first_layers(t, 0, Tier::Disk);
    EXPECT_DOUBLE_EQ(estimate(disk, t, p, staged).prefill_s_per_token, estimate(disk, t, p, two).prefill_s_per_token);
    // Below ship_min_tokens, or with no slots, the CPU multiplies: no GPU in the profile gives
    // the same.
    HardwareProfile cpu_only = p;
    cpu_only.gpu_name.clear();
    cpu_only.gpu_read_gbs = 0;
    ASSERT_FALSE(cpu_only.has_gpu());
    CostParams short_batch = two;
    short_batch.n_prompt = 32;
    EXPECT_DOUBLE_EQ(estimate(ram, t, p, short_batch).prefill_s_per_token,
                     estimate(ram, t, cpu_only, short_batch).prefill_s_per_token);
    CostParams none = two;
    none.ship_slots = 0;
    EXPECT_DOUBLE_EQ(estimate(ram, t, p, none).prefill_s_per_token, estimate(ram, t, cpu_only, none).prefill_s_per_token);
    EXPECT_GT(estimate(ram, t, p, none).prefill_s_per_token, e1);  // the CPU's 300 GFLOP/s
}

}  // namespace
}  // namespace strata
