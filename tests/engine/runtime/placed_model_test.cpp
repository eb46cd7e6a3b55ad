// The executor over placements: logits with weights spread over a (fake) GPU, RAM and DISK must
// match the all-CPU logits — exactly when no FFN is split (the same kernels run on the same
// inputs; only the memory differs), within float rounding when a split FFN adds partial sums.
// Split cases run the f32 matmul path: with 8-bit activations a one-ulp change of the residual
// can flip an activation's rounding, a jump that random synthetic weights amplify to ~1% of
// the logits (measured), which would hide real errors behind a loose bound.
// Every case runs twice: on the fake device, and on the CUDA backend where one is present (on
// the f32 path there, against the CPU's f32 path: the GPU sums in another order, so 2e-3).
// The fake device refuses host tensors, so an op that reaches the wrong backend fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/runtime_budget.h"
#include "engine/runtime/session.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "offload/disk_stream.h"
#include "backends/fake_device.h"
#include "tests/engine/synth/scratch_file.h"
#if STRATA_HAVE_CUDA
#include "kernels_cuda/cuda_backend.h"
#include "kernels_cuda/device_info.h"
#endif

namespace strata {
namespace {

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 7, 250, 99, 3, 480};
constexpr int kDecodeSteps = 4;

// Logits of the prompt's last token and of kDecodeSteps greedy steps after it.
std::vector<std::vector<float>> run(const PlacedModel& placed, int64_t gpu_prefill_min_tokens = 0,
                                    uint64_t gpu_staging_limit = UINT64_MAX) {
    SessionParams params;
    params.n_ctx = 64;
    params.n_batch = 4;  // several prefill batches: the disk schedule wraps between them
    params.gpu_prefill_min_tokens = gpu_prefill_min_tokens;
    params.gpu_staging_limit = gpu_staging_limit;
    Session session(placed, params);
    std::vector<std::vector<float>> out;
    auto logits = session.feed(kPrompt);
    out.emplace_back(logits.begin(), logits.end());
    for (int s = 0; s < kDecodeSteps; ++s) {
        const int32_t next = static_cast<int32_t>(std::max_element(out.back().begin(), out.back().end()) -
                                                  out.back().begin());
        logits = session.feed(std::vector<int32_t>{next});
        out.emplace_back(logits.begin(), logits.end());
    }
    return out;
}

// A placement with every tensor on `tier` and every KV cache on `kv`.
Placement uniform(const Model& model, Tier tier, Tier kv) {
    Placement p;
    p.model = model_fingerprint(model);
    p.n_ctx = 64;
    for (const TensorEntry& t : tensor_table(model).tensors) p.tensors.push_back({t.name, tier});
    p.kv.assign(static_cast<size_t>(model.config().n_layer), kv);
    return p;
}

void set_tier(Placement& p, const std::string& name, Tier tier) {
    for (TensorPlacement& t : p.tensors)
        if (t.name == name) {
            t.tier = tier;
            return;
        }
    FAIL() << "no tensor " << name;
}

void split_ffn(Placement& p, int layer, int64_t gpu_end, int64_t ram_end) {
    const std::string prefix = "blk." + std::to_string(layer) + ".ffn_";
    std::erase_if(p.tensors, [&](const TensorPlacement& t) {
        return t.name.rfind(prefix, 0) == 0 && t.name.find("norm") == std::string::npos;
    });
    p.ffn_splits.push_back({layer, gpu_end, ram_end});
}

bool cuda_available() {
#if STRATA_HAVE_CUDA
    return !cuda::list_devices().empty();
#else
    return false;
#endif
}

class PlacedModelTest : public ::testing::TestWithParam<std::tuple<const char*, bool>> {
  protected:
    void SetUp() override {
        cuda_ = std::get<1>(GetParam());
        if (cuda_ && !cuda_available()) GTEST_SKIP() << "no CUDA device (or built without CUDA)";
        SynthOptions options;
        options.preset = std::get<0>(GetParam());
        write_synth_model(options, file_.path());
        model_ = std::make_unique<Model>(file_.path());
        reference_ = run(PlacedModel(*model_, cpu_));
        reference_f32_ = run(PlacedModel(*model_, cpu_f32_));
    }

    // Runs `placement` on the fake GPU + CPU and compares with the all-CPU logits; f32: both
    // on the f32 matmul path.
    void expect_matches(const Placement& placement, double tolerance, const DiskStreamOptions& disk = {},
                        bool f32 = false, int64_t gpu_prefill_min_tokens = 0) {
        check_placement_for(placement, *model_);
        std::unique_ptr<Backend> owned;
        FakeDeviceBackend* fake = nullptr;
        if (cuda_) {
#if STRATA_HAVE_CUDA
            cuda::CudaBackendOptions o;
            o.budget_bytes = 1ull << 30;
            o.quantize_activations = false;
            owned = std::make_unique<cuda::CudaBackend>(o);
#endif
            f32 = true;
            tolerance = std::max(tolerance, 2e-3);
        } else {
            owned = std::make_unique<FakeDeviceBackend>(
                FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1, .quantize_activations = !f32,
                                  .step_graphs = true});
            fake = static_cast<FakeDeviceBackend*>(owned.get());
        }
        Backend& gpu = *owned;
        const PlacedModel placed(*model_, placement, {f32 ? &cpu_f32_ : &cpu_, &gpu}, disk);
        if (fake != nullptr) loaded_ = fake->stats();
        const auto got = run(placed, gpu_prefill_min_tokens, staging_limit_);
        const auto& reference_ = f32 ? reference_f32_ : this->reference_;
        ASSERT_EQ(got.size(), reference_.size());
        for (size_t s = 0; s < got.size(); ++s) {
            ASSERT_EQ(got[s].size(), reference_[s].size());
            double max_diff = 0, max_ref = 0;
            for (size_t i = 0; i < got[s].size(); ++i) {
                max_diff = std::max(max_diff, std::abs(static_cast<double>(got[s][i]) - reference_[s][i]));
                max_ref = std::max(max_ref, std::abs(static_cast<double>(reference_[s][i])));
            }
            EXPECT_LE(max_diff, tolerance * max_ref) << "step " << s;
        }
        residency_ = placed.stats();
        if (placed.disk_stream()) disk_reads_ = placed.disk_stream()->stats().reads;
#if STRATA_HAVE_CUDA
        if (auto* c = dynamic_cast<cuda::CudaBackend*>(owned.get())) graph_launches_ = c->graph_launches();
#endif
        if (fake != nullptr) {
            stats_ = fake->stats();
            graph_launches_ = stats_.graph_launches;
            EXPECT_LE(stats_.peak_bytes, fake->budget_bytes());
        }
    }

    const ModelConfig& config() const { return model_->config(); }

    bool cuda_ = false;
    testing::ScratchFile file_{std::string(std::get<0>(GetParam())) + (std::get<1>(GetParam()) ? "_cuda" : "_fake") +
                               "_placed.gguf"};
    std::unique_ptr<Model> model_;
    cpu::CpuBackend cpu_{2};
    cpu::CpuBackend cpu_f32_{cpu::CpuBackendOptions{2, false}};
    std::vector<std::vector<float>> reference_, reference_f32_;
    FakeDeviceStats stats_, loaded_;  // loaded_: after the weights' upload, before the session
    ResidencyStats residency_;
    uint64_t staging_limit_ = UINT64_MAX;  // SessionParams::gpu_staging_limit of expect_matches
    uint64_t disk_reads_ = 0;
    uint64_t graph_launches_ = 0;
};

// Without --pin-weights / --no-pin-weights, RAM weights are pinned for direct prefill copies
// when prompt batches ship them and they take at most half the RAM.
TEST(PinWeightsDefault, PinsShippedRamWeightsOfAtMostHalfTheRam) {
    constexpr uint64_t kGiB = uint64_t{1} << 30;
    EXPECT_TRUE(pins_ram_weights_by_default(true, 34 * kGiB, 125 * kGiB));   // 70B at 6 GiB, H200 host
    EXPECT_TRUE(pins_ram_weights_by_default(true, 16 * kGiB, 32 * kGiB));    // exactly half
    EXPECT_FALSE(pins_ram_weights_by_default(true, 16 * kGiB + 1, 32 * kGiB));
    EXPECT_FALSE(pins_ram_weights_by_default(true, 24 * kGiB, 32 * kGiB));   // a 70B laptop: staging
    EXPECT_FALSE(pins_ram_weights_by_default(false, 4 * kGiB, 125 * kGiB));  // prompt batches stay home
    EXPECT_FALSE(pins_ram_weights_by_default(true, 0, 125 * kGiB));          // nothing in RAM
    EXPECT_FALSE(pins_ram_weights_by_default(true, 1, 0));                   // RAM unknown
}

// The GPU room kept out of the placement for shipped weights: two of the largest layer matrix
// (copies overlap products) where that and its slack take at most a quarter of the GPU, else one,
// else none; the slack is a quarter of the matrix, at most 64 MiB.
TEST_P(PlacedModelTest, StagingRoomHoldsTwoSlotsWhereTheyFit) {
    if (cuda_) GTEST_SKIP() << "budget arithmetic; runs with the fake device";
    const TensorTable table = tensor_table(*model_);
    uint64_t largest = 0;
    for (const TensorEntry& t : table.tensors) {
        if (t.ne[1] > 1 && t.name != "token_embd.weight" && t.name != "output.weight") largest = std::max(largest, t.bytes);
    }
    ASSERT_GT(largest, 0u);
    const uint64_t slack = std::min<uint64_t>(largest / 4, 64ull << 20);
    SessionParams session;
    session.n_batch = 512;
    const auto budgets_at = [&](uint64_t gpu_bytes) {
        FakeDeviceBackend gpu({.budget_bytes = gpu_bytes});
        return runtime_budgets(config(), table, session, model_->weights().output.ne[1], &gpu, 0,
                               smallest_shipping_batch(session, false));
    };
    const uint64_t two = 4 * (2 * largest + slack), one = 4 * (largest + slack);
    for (const auto& [bytes, slots, reserve] : {std::tuple{two, 2, 2 * largest + slack},
                                                 std::tuple{two - 1, 1, largest + slack},
                                                 std::tuple{one, 1, largest + slack},
                                                 std::tuple{one - 1, 0, uint64_t{0}}}) {
        const RuntimeBudgets b = budgets_at(bytes);
        ASSERT_EQ(b.gpu_free, bytes);
        EXPECT_TRUE(b.ships);
        EXPECT_EQ(b.staging_slots, slots) << bytes << " bytes";
        EXPECT_EQ(b.staging_reserve, reserve) << bytes << " bytes";
        EXPECT_EQ(b.gpu_reserved, b.activation_reserve + reserve);
    }
    // A batch below the default threshold (64) still keeps the room: the break-even, known once
    // placed, may lower the threshold to it; not when the user fixed the threshold.
    session.n_batch = 32;
    EXPECT_EQ(budgets_at(two).staging_slots, 2);
    {
        FakeDeviceBackend gpu({.budget_bytes = two});
        EXPECT_EQ(runtime_budgets(config(), table, session, model_->weights().output.ne[1], &gpu, 0,
                                  smallest_shipping_batch(session, true)).staging_slots, 0);
    }
    session.n_batch = 1;  // one token a pass: nothing ships
    EXPECT_EQ(budgets_at(two).staging_slots, 0);
    session.n_batch = 512;
    session.gpu_prefill_min_tokens = 0;  // prompt batches never ship: no room kept
    EXPECT_EQ(budgets_at(two).staging_slots, 0);
    EXPECT_EQ(budgets_at(two).staging_reserve, 0u);
}

TEST(ShippingBatch, IsTheUsersOrTheSmallestBreakEven) {
    SessionParams s;
    s.gpu_prefill_min_tokens = 64;
    EXPECT_EQ(smallest_shipping_batch(s, false), kShipBreakEvenCandidates[0]);
    EXPECT_EQ(smallest_shipping_batch(s, true), 64);
    s.gpu_prefill_min_tokens = 1;
    EXPECT_EQ(smallest_shipping_batch(s, false), 1);
    s.gpu_prefill_min_tokens = 0;
    EXPECT_EQ(smallest_shipping_batch(s, false), 0);
    EXPECT_EQ(smallest_shipping_batch(s, true), 0);
}

TEST_P(PlacedModelTest, AllOnTheGpuIsExact) {
    expect_matches(uniform(*model_, Tier::Gpu, Tier::Gpu), 0.0);
    EXPECT_GT(residency_.gpu_weight_bytes, 0u);
    EXPECT_EQ(residency_.ram_weight_bytes, 0u);
    // Only token ids go in (as op arguments); hidden states of prefill batches and the logits
    // come out. The logits are computed from the hidden state where it is: it never goes back in.
    if (!cuda_) {
        EXPECT_GT(stats_.copies_out, 0u);
        EXPECT_EQ(stats_.copies_in, loaded_.copies_in);  // none after the weights' upload
    }
    // Every decode step after the first eager one is one graph launch (the fake device's
    // recordings run as CUDA's do).
    EXPECT_GE(graph_launches_, static_cast<uint64_t>(kDecodeSteps - 1));
}

TEST_P(PlacedModelTest, LayersAlternatingBetweenGpuAndRamAreExact) {
    Placement p = uniform(*model_, Tier::Ram, Tier::Ram);
    for (int il = 0; il < config().n_layer; il += 2) {
        p.kv[static_cast<size_t>(il)] = Tier::Gpu;
        for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_output"})
            set_tier(p, "blk." + std::to_string(il) + "." + t + ".weight", Tier::Gpu);
    }
    // FFN of layer 1 on the GPU while its attention is in RAM.
    for (const char* t : {"ffn_gate", "ffn_up", "ffn_down"}) set_tier(p, std::string("blk.1.") + t + ".weight", Tier::Gpu);
    if (!config().tied_output) set_tier(p, "output.weight", Tier::Gpu);
    expect_matches(p, 0.0);
    if (!cuda_) {
        EXPECT_GT(stats_.copies_in, 0u);
        EXPECT_GT(stats_.copies_out, 0u);
    }
    // Each attention block on the GPU is a graph in decode steps after the first (the
    // executor's segments), its residual stream copied in before it.
    const auto gpu_layers = static_cast<uint64_t>((config().n_layer + 1) / 2);
    EXPECT_GE(graph_launches_, static_cast<uint64_t>(kDecodeSteps - 1) * gpu_layers);
}

TEST_P(PlacedModelTest, WeightsAwayFromTheirKvAreExact) {
    // KV (so norms, RoPE, attention) on the GPU, every projection in RAM, and the reverse.
    expect_matches(uniform(*model_, Tier::Ram, Tier::Gpu), 0.0);
    expect_matches(uniform(*model_, Tier::Gpu, Tier::Ram), 0.0);
}

TEST_P(PlacedModelTest, SplitFfnsMatchWithinRounding) {
    Placement p = uniform(*model_, Tier::Gpu, Tier::Gpu);
    const int64_t n_ff = config().n_ff[0];
    const int64_t granule = find_ffn_tensors(tensor_table(*model_), 0)->granule;
    ASSERT_GT(n_ff, granule);
    split_ffn(p, 0, granule, n_ff);             // a sliver on the GPU
    split_ffn(p, 1, n_ff - granule, n_ff);      // most on the GPU
    split_ffn(p, 2, 0, n_ff);                   // all in RAM, expressed as a split
    check_placement_for(p, *model_);
    expect_matches(p, 1e-4, {}, true);
}

TEST_P(PlacedModelTest, SplitFfnRamColumnsArePackedCopies) {
    // The RAM part of a split ffn_down is a column slice of the mapped matrix; the CPU reads
    // it from a packed copy (a strided view reads slowly), equal to the slice row by row.
    Placement p = uniform(*model_, Tier::Gpu, Tier::Gpu);
    const int64_t n_ff = config().n_ff[0];
    const int64_t granule = find_ffn_tensors(tensor_table(*model_), 0)->granule;
    split_ffn(p, 0, granule, n_ff);
    split_ffn(p, 1, 0, n_ff);  // all in RAM: the whole matrix, read in place
    FakeDeviceBackend gpu(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1});
    const PlacedModel placed(*model_, p, {&cpu_, &gpu});
    const Tensor slice = model_->weights().layers[0].ffn_down.columns(granule, n_ff - granule);
    ASSERT_FALSE(slice.is_contiguous());
    const PlacedLayer& l0 = placed.layer(0);
    ASSERT_EQ(l0.ffn.size(), 2u);
    const Tensor& packed = l0.ffn[1].down.tensor;
    EXPECT_EQ(l0.ffn[1].down.tier, Tier::Ram);
    EXPECT_TRUE(packed.is_contiguous());
    EXPECT_NE(packed.data, slice.data);
    ASSERT_EQ(packed.ne, slice.ne);
    for (int64_t r = 0; r < slice.ne[1]; ++r) {
        ASSERT_EQ(std::memcmp(packed.row(r).data, slice.row(r).data, slice.row_bytes()), 0) << "row " << r;
    }
    const PlacedLayer& l1 = placed.layer(1);
    ASSERT_EQ(l1.ffn.size(), 1u);
    EXPECT_EQ(l1.ffn[0].down.tensor.data, model_->weights().layers[1].ffn_down.data);
}

TEST_P(PlacedModelTest, DiskWeightsStreamInProgramOrder) {
    Placement p = uniform(*model_, Tier::Gpu, Tier::Gpu);
    for (const char* t : {"ffn_gate", "ffn_up", "ffn_down"}) {
        set_tier(p, std::string("blk.1.") + t + ".weight", Tier::Disk);
        set_tier(p, std::string("blk.") + std::to_string(config().n_layer - 1) + "." + t + ".weight", Tier::Disk);
    }
    set_tier(p, "blk.0.attn_v.weight", Tier::Disk);  // streamed, computed on the CPU, KV on the GPU
    set_tier(p, "blk.2.attn_q.weight", Tier::Ram);
    // Both modes where the file system allows O_DIRECT: in direct mode a weight released too
    // early is overwritten by the read-ahead (staging smaller than the streamed bytes).
    std::vector<DiskIo> modes = {DiskIo::Mmap};
    if (supports_direct_io(file_.path())) modes.push_back(DiskIo::Direct);
    for (DiskIo mode : modes) {
        SCOPED_TRACE(disk_io_name(mode));
        DiskStreamOptions disk;
        disk.mode = mode;
        disk.staging_bytes = 1ull << 20;
        for (int rep = 0; rep < 3; ++rep) expect_matches(p, 0.0, disk);
        EXPECT_GT(residency_.disk_weight_bytes, 0u);
        // 7 streamed tensors, read once per forward pass: 3 prefill batches + kDecodeSteps.
        EXPECT_EQ(disk_reads_, 7u * (3 + kDecodeSteps));
    }
}

TEST_P(PlacedModelTest, PrefillShipsHostWeightsToTheGpu) {
    // Batches of 4 prompt tokens multiply RAM and DISK weights on the GPU; decode stays put.
    Placement p = uniform(*model_, Tier::Ram, Tier::Gpu);
    for (const char* t : {"ffn_gate", "ffn_up", "ffn_down"}) set_tier(p, std::string("blk.1.") + t + ".weight", Tier::Disk);
    split_ffn(p, 2, find_ffn_tensors(tensor_table(*model_), 2)->granule, config().n_ff[2]);
    DiskStreamOptions disk;
    disk.mode = DiskIo::Mmap;
    disk.staging_bytes = 1ull << 20;
    expect_matches(p, cuda_ ? 2e-3 : 1e-5, disk, false, 4);  // 1e-5: the split sum rounds differently (3e-7 seen)
    if (!cuda_) {
        // Every host weight went in once per 4-token batch (two of the three prompt batches),
        // but the embeddings (rows are looked up on the host) and the output matrix (only the
        // last batch's last row takes logits).
        uint64_t host_bytes = residency_.ram_weight_bytes + residency_.disk_weight_bytes;
        for (const TensorEntry& t : tensor_table(*model_).tensors) {
            if (t.name == "token_embd.weight" || t.name == "output.weight") host_bytes -= t.bytes;
        }
        EXPECT_GE(stats_.bytes_in, 2 * host_bytes);
    }
}

TEST_P(PlacedModelTest, ADecodeOverRamWeightsAndAGpuCacheCopiesQkvInAndTheAttentionOut) {
    // Weights in RAM, KV caches on the GPU: a decode step's norms and projections run on the
    // CPU, and per layer only q, k and v go to the GPU and the attention comes back (before:
    // the input and the output of each host product crossed, 9 copies a layer).
    if (cuda_) GTEST_SKIP() << "counts copies on the fake device";
    const Placement p = uniform(*model_, Tier::Ram, Tier::Gpu);
    FakeDeviceBackend fake(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1});
    const PlacedModel placed(*model_, p, {&cpu_, &fake});
    SessionParams params;
    params.n_ctx = 64;
    params.n_batch = 4;
    Session session(placed, params);
    const auto prompt_logits = session.feed(kPrompt);
    const int32_t next = static_cast<int32_t>(std::max_element(prompt_logits.begin(), prompt_logits.end()) -
                                              prompt_logits.begin());
    const FakeDeviceStats before = fake.stats();
    const auto logits = session.feed(std::vector<int32_t>{next});
    const FakeDeviceStats after = fake.stats();
    const auto n_layer = static_cast<uint64_t>(config().n_layer);
    EXPECT_EQ(after.copies_in - before.copies_in, 3 * n_layer);
    EXPECT_EQ(after.copies_out - before.copies_out, n_layer);
    // The same logits as the CPU alone (reference_[1] is the first decode step's).
    ASSERT_EQ(logits.size(), reference_[1].size());
    for (size_t i = 0; i < logits.size(); ++i) ASSERT_EQ(logits[i], reference_[1][i]) << "logit " << i;
}

TEST_P(PlacedModelTest, PrefillShipsOnlyWeightsThatFitTheStagingLimit) {
    // A staging limit below the FFN matrices: attention weights still go to the GPU, each FFN
    // part is computed in RAM, and the logits do not change.
    const Placement p = uniform(*model_, Tier::Ram, Tier::Gpu);
    uint64_t attn_bytes = 0, largest_attn = 0, host_bytes = 0;
    for (const TensorEntry& t : tensor_table(*model_).tensors) {
        if (t.ne[1] == 1 || t.name == "token_embd.weight" || t.name == "output.weight") continue;
        host_bytes += t.bytes;
        if (t.name.find(".attn_") != std::string::npos) {
            attn_bytes += t.bytes;
            largest_attn = std::max(largest_attn, t.bytes);
        }
    }
    staging_limit_ = largest_attn;
    expect_matches(p, cuda_ ? 2e-3 : 1e-5, {}, false, 4);
    if (!cuda_) {
        EXPECT_GE(stats_.bytes_in, 2 * attn_bytes);  // two 4-token prompt batches shipped attention
        EXPECT_LT(stats_.bytes_in, 2 * host_bytes);  // and not the FFN matrices
    }
}

TEST_P(PlacedModelTest, UnsupportedPlacementsAreRefused) {
    if (cuda_) GTEST_SKIP() << "backend-independent; runs with the fake device";
    cpu::CpuBackend& cpu = cpu_;
    FakeDeviceBackend gpu({.budget_bytes = 256ull << 20});
    // A GPU tier without a GPU backend.
    EXPECT_THROW(PlacedModel(*model_, uniform(*model_, Tier::Gpu, Tier::Gpu), {&cpu, nullptr}), UnsupportedError);
    // The embedding table on DISK.
    Placement p = uniform(*model_, Tier::Ram, Tier::Ram);
    set_tier(p, "token_embd.weight", Tier::Disk);
    EXPECT_THROW(PlacedModel(*model_, p, {&cpu, &gpu}), UnsupportedError);
    // A neuron range of a split FFN on DISK.
    Placement q = uniform(*model_, Tier::Ram, Tier::Ram);
    split_ffn(q, 0, 0, config().n_ff[0] / 2 / 256 * 256);
    EXPECT_THROW(PlacedModel(*model_, q, {&cpu, &gpu}), UnsupportedError);
}

TEST_P(PlacedModelTest, GpuBudgetIsEnforced) {
    if (cuda_) GTEST_SKIP() << "tests/kernels_cuda/vram_budget_test.cpp covers the CUDA arena";
    cpu::CpuBackend& cpu = cpu_;
    FakeDeviceBackend small({.budget_bytes = 64 << 10});
    EXPECT_THROW(PlacedModel(*model_, uniform(*model_, Tier::Gpu, Tier::Gpu), {&cpu, &small}), BudgetError);
    EXPECT_EQ(small.stats().used_bytes, 0u) << "a failed load must give its memory back";
}

TEST_P(PlacedModelTest, BuiltinPlacementsMatch) {
    const TensorTable table = tensor_table(*model_);
    uint64_t total = 0;
    for (const TensorEntry& t : table.tensors) total += t.bytes;
    // GPU budgets from nothing to everything; RAM just large enough for what is left.
    for (double share : {0.0, 0.2, 0.5, 1.5}) {
        BuiltinPlacementParams params;
        params.n_ctx = 64;
        params.budgets.gpu_bytes = static_cast<uint64_t>(share * static_cast<double>(total));
        params.budgets.ram_bytes = total;
        Placement p = builtin_placement(table, params);
        p.model = model_fingerprint(*model_);
        SCOPED_TRACE(share);
        expect_matches(p, 1e-4, {}, true);
    }
}

INSTANTIATE_TEST_SUITE_P(Presets, PlacedModelTest,
                         ::testing::Combine(::testing::Values("tiny", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3"),
                                            ::testing::Bool()),
                         [](const auto& info) {
                             std::string s = std::get<0>(info.param);
                             std::erase(s, '-');
                             return s + (std::get<1>(info.param) ? "_cuda" : "_fake");
                         });

}  // namespace
}  // namespace strata
