// Mixture-of-experts layers under placements: experts on the (fake) GPU, in RAM and streamed
// from DISK, with attention elsewhere, must give the all-CPU logits (the same kernels run on the
// same rows; routing and the weighted sum are on the host either way). The fake device refuses
// host tensors, so an expert product that reaches the wrong backend fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/activation_observer.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/profile_run.h"
#include "engine/runtime/session.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "offload/disk_stream.h"
#include "backends/fake_device.h"
#include "tests/engine/runtime/moe_plan_helper.h"
#include "tests/engine/runtime/rel_diff.h"
#include "tests/engine/synth/scratch_file.h"
#if STRATA_HAVE_CUDA
#include "kernels_cuda/cuda_backend.h"
#include "kernels_cuda/device_info.h"
#endif

namespace strata {
namespace {

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 7, 250, 99, 3, 480, 11, 64};

// The prompt's logits, then 4 greedy decode steps' logits; `times`: the decode's MoE counts.
std::vector<std::vector<float>> run(const PlacedModel& placed, int64_t gpu_prefill_min_tokens = 0,
                                    LayerProgram::MoeHostTimes* times = nullptr) {
    SessionParams params;
    params.n_ctx = 64;
    params.n_batch = 4;
    params.gpu_prefill_min_tokens = gpu_prefill_min_tokens;
    Session session(placed, params);
    std::vector<std::vector<float>> out;
    auto logits = session.feed(kPrompt);
    out.emplace_back(logits.begin(), logits.end());
    for (int s = 0; s < 4; ++s) {
        const auto next = static_cast<int32_t>(std::max_element(out.back().begin(), out.back().end()) - out.back().begin());
        logits = session.feed(std::vector<int32_t>{next});
        out.emplace_back(logits.begin(), logits.end());
    }
    if (times != nullptr) *times = session.program().moe_host_times();
    return out;
}

// The last logits of one 48-token prompt pass (n_batch 48); `shipped`: the bytes it shipped.
std::vector<float> one_pass_logits(const PlacedModel& placed, int64_t gpu_prefill_min_tokens,
                                   uint64_t* shipped = nullptr) {
    std::vector<int32_t> prompt(48);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919 + 13) % 512);
    SessionParams params;
    params.n_ctx = 64;
    params.n_batch = 48;
    params.gpu_prefill_min_tokens = gpu_prefill_min_tokens;
    Session session(placed, params);
    const auto logits = session.feed(prompt);
    if (shipped != nullptr) *shipped = session.program().ship_stats().bytes;
    return std::vector<float>(logits.begin(), logits.end());
}

// max |got - ref| <= tolerance · max |ref| (rel_diff.h).
void expect_close(const std::vector<float>& got, const std::vector<float>& ref, double tolerance) {
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_LE(testing::rel_max_diff(got, ref), tolerance);
}

// Every tensor named with `part` in it on `tier`, the rest on `rest`; KV on `kv`.
Placement placement(const Model& model, const std::string& part, Tier tier, Tier rest, Tier kv) {
    Placement p;
    p.model = model_fingerprint(model);
    p.n_ctx = 64;
    for (const TensorEntry& t : tensor_table(model).tensors) {
        const bool embd = t.name == "token_embd.weight" || t.name == "output.weight";
        p.tensors.push_back({t.name, t.name.find(part) != std::string::npos ? tier : embd && rest == Tier::Disk ? Tier::Ram : rest});
    }
    p.kv.assign(static_cast<size_t>(model.config().n_layer), kv);
    return p;
}

class PlacedMoeTest : public ::testing::TestWithParam<const char*> {
  protected:
    void SetUp() override {
        SynthOptions options;
        options.preset = GetParam();
        write_synth_model(options, file_.path());
        model_ = std::make_unique<Model>(file_.path());
        reference_ = run(PlacedModel(*model_, cpu_));
    }

    void expect_matches(const Placement& p, double tolerance, const DiskStreamOptions& disk = {},
                        int64_t gpu_prefill_min_tokens = 0) {
        check_placement_for(p, *model_);
        FakeDeviceBackend gpu(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1, .step_graphs = true});
        const PlacedModel placed(*model_, p, {&cpu_, &gpu}, disk);
        const auto got = run(placed, gpu_prefill_min_tokens, &moe_times_);
        ASSERT_EQ(got.size(), reference_.size());
        for (size_t s = 0; s < got.size(); ++s) {
            SCOPED_TRACE(cat("step ", s));
            expect_close(got[s], reference_[s], tolerance);
        }
        stats_ = placed.stats();
        gpu_stats_ = gpu.stats();
    }

    testing::ScratchFile file_{std::string(GetParam()) + "_placed_moe.gguf"};
    std::unique_ptr<Model> model_;
    cpu::CpuBackend cpu_{2};
    std::vector<std::vector<float>> reference_;
    ResidencyStats stats_;
    FakeDeviceStats gpu_stats_;
    LayerProgram::MoeHostTimes moe_times_;
};

// Everything on the GPU: decode routes each layer's experts there (routed_expert_ffn), so steps
// 2 to 4 (the first is eager) are each one recorded step graph, recorded at the second and
// replayed at the next positions, with nothing copied back but the logits.
TEST_P(PlacedMoeTest, AllOnTheGpu) {
    expect_matches(placement(*model_, "", Tier::Gpu, Tier::Gpu, Tier::Gpu), 0.0);
    EXPECT_EQ(stats_.ram_weight_bytes, 0u);
    EXPECT_EQ(gpu_stats_.graph_launches, 3u);
}

// Everything on the GPU but layer 0's expert 1, in RAM: layer 0 routes on the host (a token may
// choose that expert), so the step is no single graph; each layer is a recorded part instead
// (layer 0 its attention block and router, the others the whole layer with their routing).
TEST_P(PlacedMoeTest, OneExpertInRamKeepsItsLayersRoutingOnTheHost) {
    Placement p = placement(*model_, "", Tier::Gpu, Tier::Gpu, Tier::Gpu);
    const std::string layer0 = "blk.0.ffn_";
    std::erase_if(p.tensors, [&](const TensorPlacement& t) {
        return t.name.starts_with(layer0) && t.name.find("_exps") != std::string::npos;
    });
    ExpertTiers tiers{0, std::vector<Tier>(static_cast<size_t>(model_->config().moe.n_expert), Tier::Gpu)};
    tiers.tiers[1] = Tier::Ram;
    p.expert_tiers.push_back(tiers);
    expect_matches(p, 0.0);
    EXPECT_GT(stats_.ram_weight_bytes, 0u);
    EXPECT_EQ(gpu_stats_.graph_launches, static_cast<uint64_t>(3 * model_->config().n_layer));
    // Every decode selection is counted once, where it ran: layer 0's on the host or the GPU
    // (routed on the host), the other layers' on the GPU (routed there inside replayed graphs).
    const auto per_step = static_cast<uint64_t>(model_->config().n_layer * model_->config().moe.n_expert_used);
    const auto others = static_cast<uint64_t>((model_->config().n_layer - 1) * model_->config().moe.n_expert_used);
    EXPECT_EQ(moe_times_.gpu_selections + moe_times_.host_selections, 4 * per_step);
    EXPECT_GE(moe_times_.gpu_selections, 4 * others);
    EXPECT_EQ(moe_times_.layers, 4);  // layer 0 of each decode step routed on the host
}

TEST_P(PlacedMoeTest, ExpertsInRamAttentionOnTheGpu) {
    expect_matches(placement(*model_, "_exps", Tier::Ram, Tier::Gpu, Tier::Gpu), 0.0);
    EXPECT_GT(stats_.ram_weight_bytes, 0u);
    EXPECT_GT(gpu_stats_.copies_out, 0u);
    EXPECT_EQ(gpu_stats_.graph_launches, static_cast<uint64_t>(3 * model_->config().n_layer));
}

// On CUDA, each layer's attention block and router run as one graph in decode steps (the
// executor's segments: recorded at the second step, replayed at later positions) while the
// routed experts stay outside it, on the host or as the device's expert op. The logits must
// stay the CPU's (f32 activations on both sides), and every layer of the later steps must be
// a graph launch.
TEST_P(PlacedMoeTest, CudaDecodeRunsEachLayersAttentionAsAGraph) {
#if STRATA_HAVE_CUDA
    if (cuda::list_devices().empty()) GTEST_SKIP() << "no CUDA device";
    cpu::CpuBackend cpu_f32{cpu::CpuBackendOptions{2, false}};
    const auto reference = run(PlacedModel(*model_, cpu_f32));
    for (const Tier experts : {Tier::Ram, Tier::Gpu}) {
        SCOPED_TRACE(experts == Tier::Ram ? "experts in RAM" : "experts on the GPU");
        cuda::CudaBackendOptions o;
        o.budget_bytes = 1ull << 30;
        o.quantize_activations = false;
        cuda::CudaBackend gpu(o);
        const PlacedModel placed(*model_, placement(*model_, "_exps", experts, Tier::Gpu, Tier::Gpu), {&cpu_f32, &gpu});
        const auto got = run(placed);
        ASSERT_EQ(got.size(), reference.size());
        for (size_t s = 0; s < got.size(); ++s) {
            SCOPED_TRACE(cat("step ", s));
            expect_close(got[s], reference[s], 2e-3);
        }
        // Decode steps 2 to 4 (the first is eager): one launch per layer each.
        EXPECT_GE(gpu.graph_launches(), static_cast<uint64_t>(3 * model_->config().n_layer));
    }
#else
    GTEST_SKIP() << "built without CUDA";
#endif
}

// A decode observer that reads nothing: while it is set, the program routes on the host and
// runs every step eagerly (LayerProgram::set_observer).
class NullObserver : public ActivationObserver {
  public:
    void observe(int, ActivationSite, const Tensor&) override {}
};

// The logits of 5 decode steps with fixed tokens after the prompt (teacher-forced: both runs see
// the same inputs whatever they predict), with `observer` set on the program.
std::vector<std::vector<float>> forced_logits(const PlacedModel& placed, ActivationObserver* observer) {
    const ModelConfig& c = placed.model().config();
    LayerProgram program(placed, 0);
    program.set_observer(observer);
    KvCache kv(c, 64, GgmlType::F16, placed.kv_backends());
    std::vector<float> hidden, logits(static_cast<size_t>(program.n_vocab()));
    program.forward(kPrompt, kv, {}, hidden);
    std::vector<std::vector<float>> out;
    for (int32_t s = 0; s < 5; ++s) {
        const int32_t token = (s * 131 + 7) % 512;
        program.forward_logits({&token, 1}, kv, 0, hidden, logits.data());
        out.push_back(logits);
    }
    return out;
}

// On CUDA with 8-bit activations (the default), everything on the GPU: each layer routes there
// (routed_expert_ffn), so decode steps 2 to 5 are one graph each (recorded at the second step,
// replayed after), and their logits are those of the same placement routing on the host (an
// observer set: eager steps, router logits copied back, the chosen experts as expert_ffn).
// Both run the same kernels on the same experts in the same order, so they agree to rounding.
TEST_P(PlacedMoeTest, CudaDecodeStepWithRoutedExpertsIsOneGraph) {
#if STRATA_HAVE_CUDA
    if (cuda::list_devices().empty()) GTEST_SKIP() << "no CUDA device";
    cuda::CudaBackendOptions o;
    o.budget_bytes = 1ull << 30;
    cuda::CudaBackend gpu(o);
    const PlacedModel placed(*model_, placement(*model_, "", Tier::Gpu, Tier::Gpu, Tier::Gpu), {&cpu_, &gpu});
    NullObserver observer;
    const auto host_routed = forced_logits(placed, &observer);
    EXPECT_EQ(gpu.graph_launches(), 0u);
    const auto routed = forced_logits(placed, nullptr);
    EXPECT_EQ(gpu.graph_launches(), 4u);
    ASSERT_EQ(routed.size(), host_routed.size());
    for (size_t s = 0; s < routed.size(); ++s) {
        SCOPED_TRACE(cat("step ", s));
        expect_close(routed[s], host_routed[s], 1e-4);
    }
#else
    GTEST_SKIP() << "built without CUDA";
#endif
}

// The same on the fake device: with an observer set no step is a graph; without, steps 2 to 5
// are (the fake device records routed_expert_ffn), and the logits are identical.
TEST_P(PlacedMoeTest, RoutedDecodeEqualsHostRouting) {
    FakeDeviceBackend gpu(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1, .step_graphs = true});
    const PlacedModel placed(*model_, placement(*model_, "", Tier::Gpu, Tier::Gpu, Tier::Gpu), {&cpu_, &gpu});
    NullObserver observer;
    const auto host_routed = forced_logits(placed, &observer);
    EXPECT_EQ(gpu.stats().graph_launches, 0u);
    const auto routed = forced_logits(placed, nullptr);
    EXPECT_EQ(gpu.stats().graph_launches, 4u);
    EXPECT_EQ(routed, host_routed);
}

TEST_P(PlacedMoeTest, ExpertsOnTheGpuAttentionInRam) {
    expect_matches(placement(*model_, "_exps", Tier::Gpu, Tier::Ram, Tier::Ram), 0.0);
    EXPECT_GT(gpu_stats_.copies_in, 0u);
    EXPECT_EQ(gpu_stats_.graph_launches, 0u);  // nothing runs on the GPU alone
}

TEST_P(PlacedMoeTest, ExpertsStreamedFromDisk) {
    DiskStreamOptions disk;
    disk.mode = DiskIo::Mmap;
    disk.staging_bytes = 4ull << 20;
    expect_matches(placement(*model_, "_exps", Tier::Disk, Tier::Ram, Tier::Ram), 0.0, disk);
    EXPECT_GT(stats_.disk_weight_bytes, 0u);
}

TEST_P(PlacedMoeTest, PrefillShipsHostExpertsToTheGpu) {
    expect_matches(placement(*model_, "_exps", Tier::Ram, Tier::Gpu, Tier::Gpu), 0.0, {}, 2);
}

// One expert's three matrices on two backends (gate on the GPU, up and down in RAM), with
// prompt passes that ship host weights: every product runs where its matrix is or is shipped.
TEST_P(PlacedMoeTest, AnExpertsMatricesOnTwoBackends) {
    expect_matches(placement(*model_, "ffn_gate_exps", Tier::Gpu, Tier::Ram, Tier::Ram), 1e-5);  // nothing ships
    expect_matches(placement(*model_, "ffn_gate_exps", Tier::Gpu, Tier::Ram, Tier::Ram), 1e-5, {}, 2);
    expect_matches(placement(*model_, "ffn_up_exps", Tier::Ram, Tier::Gpu, Tier::Gpu), 1e-5, {}, 2);
}

// A 48-token prompt in one pass: each expert has about 12 tokens (top-2 of 8 experts), or 24
// (of 4), so the pass ships host experts to the GPU, computes them there and keeps the logits
// of the same pass on the CPU alone.
TEST_P(PlacedMoeTest, APromptPassShipsTheExpertsManyTokensChose) {
    const std::vector<float> ref = one_pass_logits(PlacedModel(*model_, cpu_), 0);
    const Placement p = placement(*model_, "_exps", Tier::Ram, Tier::Gpu, Tier::Gpu);
    FakeDeviceBackend gpu(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1});
    const PlacedModel placed(*model_, p, {&cpu_, &gpu});
    uint64_t shipped = 0;
    const std::vector<float> got = one_pass_logits(placed, 32, &shipped);
    uint64_t one_expert = 0;  // gate, up and down of one expert of layer 0
    for (const TensorEntry& e : tensor_table(*model_).tensors)
        if (e.layer() == 0 && e.ne[2] > 1) one_expert += e.bytes / static_cast<uint64_t>(e.ne[2]);
    ASSERT_GT(one_expert, 0u);
    EXPECT_GE(shipped, one_expert * static_cast<uint64_t>(model_->config().n_layer));
    expect_close(got, ref, 1e-5);
}

// A prompt pass queues its GPU experts without waiting for each: one copy comes back per layer
// (the sum of the device's experts, when the router's home is the host) or two (the router's
// logits and the normed input, when the home is the GPU and experts are shipped there), however
// many experts ran on the GPU (all 8 or 4 here, with 48 tokens). Logits as on the CPU alone.
TEST_P(PlacedMoeTest, APromptPassWaitsForTheGpuOncePerLayer) {
    const std::vector<float> ref = one_pass_logits(PlacedModel(*model_, cpu_), 0);
    const uint64_t n_layer = static_cast<uint64_t>(model_->config().n_layer);
    struct Case {
        const char* experts_on;
        Tier experts, rest;
        int64_t min_tokens;
        uint64_t copies_per_layer;
    };
    for (const Case& c : {Case{"GPU", Tier::Gpu, Tier::Ram, 0, 1}, Case{"RAM, shipped", Tier::Ram, Tier::Gpu, 32, 2}}) {
        SCOPED_TRACE(c.experts_on);
        FakeDeviceBackend gpu(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1});
        const PlacedModel placed(*model_, placement(*model_, "_exps", c.experts, c.rest, c.rest), {&cpu_, &gpu});
        const uint64_t before = gpu.stats().copies_out;
        const std::vector<float> got = one_pass_logits(placed, c.min_tokens);
        EXPECT_LE(gpu.stats().copies_out - before, c.copies_per_layer * n_layer + 1);
        expect_close(got, ref, 1e-5);
    }
}

// Each layer's experts one by one: expert e on GPU, RAM, DISK by e mod 3 (shifted per layer),
// with attention and routers in RAM.
TEST_P(PlacedMoeTest, ExpertsPlacedOneByOne) {
    Placement p = placement(*model_, "_exps", Tier::Ram, Tier::Ram, Tier::Ram);
    std::erase_if(p.tensors, [](const TensorPlacement& t) { return t.name.find("_exps") != std::string::npos; });
    const int64_t n_expert = model_->config().moe.n_expert;
    for (int il = 0; il < model_->config().n_layer; ++il) {
        ExpertTiers x{il, {}};
        for (int64_t e = 0; e < n_expert; ++e) x.tiers.push_back(static_cast<Tier>((e + il) % 3));
        p.expert_tiers.push_back(x);
    }
    DiskStreamOptions disk;
    disk.mode = DiskIo::Mmap;
    disk.staging_bytes = 4ull << 20;
    expect_matches(p, 0.0, disk);
    EXPECT_GT(stats_.gpu_weight_bytes, 0u);
    EXPECT_GT(stats_.ram_weight_bytes, 0u);
    EXPECT_GT(stats_.disk_weight_bytes, 0u);
    EXPECT_GT(gpu_stats_.copies_in, 0u);
}

// The planner's per-expert placement (a GPU budget of the dense weights, the KV caches and a
// third of the experts; a machine where copies are free, so GPU experts pay) runs and keeps the
// all-CPU logits.
TEST_P(PlacedMoeTest, PlannedExpertPlacement) {
    const TensorTable t = tensor_table(*model_);
    uint64_t dense = 0, experts = 0, kv = 0;
    for (const TensorEntry& e : t.tensors) (e.ne[2] > 1 ? experts : dense) += e.bytes;
    for (int l = 0; l < t.n_layer; ++l) kv += kv_bytes_per_layer(t, l, 64, GgmlType::F16);
    const Budgets budgets{dense + kv + experts / 3, 1ull << 30};
    Placement p = test::plan_moe_for_test(t, budgets);
    p.model = model_fingerprint(*model_);
    ASSERT_FALSE(p.expert_tiers.empty());
    expect_matches(p, 0.0);
    EXPECT_GT(stats_.gpu_weight_bytes, 0u);
    EXPECT_LE(stats_.gpu_weight_bytes, budgets.gpu_bytes);
}

// strata profile on a mixture of experts: per layer, every token's top-k choices counted, over
// every token of the run.
TEST_P(PlacedMoeTest, ProfileCountsTheRoutingOfEveryToken) {
    std::vector<int32_t> tokens(96);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7919 + 13) % 512);
    ProfileParams pp;
    pp.n_ctx = 32;
    pp.n_batch = 16;
    const ActivationProfile profile = profile_activations(*model_, cpu_, tokens, pp);
    const MoeConfig& mc = model_->config().moe;
    EXPECT_EQ(profile.expert_tokens, 96u);
    ASSERT_EQ(profile.expert_counts.size(), static_cast<size_t>(model_->config().n_layer));
    for (const std::vector<uint64_t>& layer : profile.expert_counts) {
        ASSERT_EQ(layer.size(), static_cast<size_t>(mc.n_expert));
        uint64_t sum = 0;
        int64_t used = 0;
        for (uint64_t c : layer) sum += c, used += c > 0;
        EXPECT_EQ(sum, 96u * static_cast<uint64_t>(mc.n_expert_used));
        EXPECT_GT(used, mc.n_expert_used);  // random weights route to more than one set of experts
    }
    const std::vector<std::vector<double>> use = profile.expert_use();
    double total = 0;
    for (double u : use[0]) total += u;
    EXPECT_NEAR(total, static_cast<double>(mc.n_expert_used), 1e-9);
}

// A synth model's routing skew (SynthOptions::routing_skew) shows in what strata profile
// counts: an expert with a larger router row is chosen more often. Over every layer's experts,
// the correlation between the log of the row's norm and the expert's count (each centred per
// layer) is strongly positive; the busiest expert's share grows with the skew.
TEST(PlacedMoeSkew, ExpertsWithLargerRouterRowsAreChosenMoreOften) {
    struct Seen {
        double correlation = 0;  // log row norm against count, over all experts
        double busiest = 0;      // the busiest expert's count over the mean, averaged over layers
    };
    const auto profile_of = [](double skew) {
        testing::ScratchFile file(cat("skew_", skew, ".gguf"));
        SynthOptions options;
        options.preset = "tiny-qwen3moe";
        options.routing_skew = skew;
        write_synth_model(options, file.path());
        const Model model(file.path());
        std::vector<int32_t> tokens(192);
        for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7919 + 13) % 512);
        ProfileParams pp;
        pp.n_ctx = 64;
        pp.n_batch = 32;
        cpu::CpuBackend cpu(2);
        const ActivationProfile profile = profile_activations(model, cpu, tokens, pp);
        std::vector<double> xs, ys;
        Seen seen;
        for (size_t il = 0; il < profile.expert_counts.size(); ++il) {
            const std::vector<uint64_t>& counts = profile.expert_counts[il];
            const Tensor& router = model.weights().layers[il].ffn_gate_inp;  // [n_embd, n_expert] f32
            const auto n = static_cast<double>(counts.size());
            double mx = 0, my = 0, most = 0;
            std::vector<double> lx, ly;
            for (size_t e = 0; e < counts.size(); ++e) {
                const float* row = router.as<float>() + static_cast<int64_t>(e) * router.ne[0];
                double sq = 0;
                for (int64_t i = 0; i < router.ne[0]; ++i) sq += static_cast<double>(row[i]) * row[i];
                lx.push_back(0.5 * std::log(sq));
                ly.push_back(static_cast<double>(counts[e]));
                mx += lx.back() / n, my += ly.back() / n, most = std::max(most, ly.back());
            }
            for (size_t e = 0; e < counts.size(); ++e) xs.push_back(lx[e] - mx), ys.push_back(ly[e] - my);
            seen.busiest += most / my / static_cast<double>(profile.expert_counts.size());
        }
        double sxy = 0, sxx = 0, syy = 0;
        for (size_t i = 0; i < xs.size(); ++i) sxy += xs[i] * ys[i], sxx += xs[i] * xs[i], syy += ys[i] * ys[i];
        seen.correlation = sxy / std::sqrt(sxx * syy);
        return seen;
    };
    const Seen plain = profile_of(0.0), skewed = profile_of(2.0);
    std::printf("busiest expert over the mean: %.2f without skew, %.2f with skew 2; correlation of count "
                "with log router-row norm %.2f\n", plain.busiest, skewed.busiest, skewed.correlation);
    EXPECT_GT(skewed.correlation, 0.5);
    EXPECT_GT(skewed.busiest, plain.busiest);
}

INSTANTIATE_TEST_SUITE_P(Presets, PlacedMoeTest, ::testing::Values("tiny-qwen3moe", "tiny-mixtral"));

}  // namespace
}  // namespace strata
