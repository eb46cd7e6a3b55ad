// Mixture-of-experts layers under placements: experts on the (fake) GPU, in RAM and streamed
// from DISK, with attention elsewhere, must give the all-CPU logits (the same kernels run on the
// same rows; routing and the weighted sum are on the host either way). The fake device refuses
// host tensors, so an expert product that reaches the wrong backend fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/session.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "offload/disk_stream.h"
#include "offload/fake_device.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 7, 250, 99, 3, 480, 11, 64};

std::vector<std::vector<float>> run(const PlacedModel& placed, int64_t gpu_prefill_min_tokens = 0) {
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
    return out;
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
        FakeDeviceBackend gpu(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1});
        const PlacedModel placed(*model_, p, {&cpu_, &gpu}, disk);
        const auto got = run(placed, gpu_prefill_min_tokens);
        ASSERT_EQ(got.size(), reference_.size());
        for (size_t s = 0; s < got.size(); ++s) {
            double max_diff = 0, max_ref = 0;
            for (size_t i = 0; i < got[s].size(); ++i) {
                max_diff = std::max(max_diff, std::abs(static_cast<double>(got[s][i]) - reference_[s][i]));
                max_ref = std::max(max_ref, std::abs(static_cast<double>(reference_[s][i])));
            }
            EXPECT_LE(max_diff, tolerance * max_ref) << "step " << s;
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
};

TEST_P(PlacedMoeTest, AllOnTheGpu) {
    expect_matches(placement(*model_, "", Tier::Gpu, Tier::Gpu, Tier::Gpu), 0.0);
    EXPECT_EQ(stats_.ram_weight_bytes, 0u);
}

TEST_P(PlacedMoeTest, ExpertsInRamAttentionOnTheGpu) {
    expect_matches(placement(*model_, "_exps", Tier::Ram, Tier::Gpu, Tier::Gpu), 0.0);
    EXPECT_GT(stats_.ram_weight_bytes, 0u);
    EXPECT_GT(gpu_stats_.copies_out, 0u);
}

TEST_P(PlacedMoeTest, ExpertsOnTheGpuAttentionInRam) {
    expect_matches(placement(*model_, "_exps", Tier::Gpu, Tier::Ram, Tier::Ram), 0.0);
    EXPECT_GT(gpu_stats_.copies_in, 0u);
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

INSTANTIATE_TEST_SUITE_P(Presets, PlacedMoeTest, ::testing::Values("tiny-qwen3moe", "tiny-mixtral"));

}  // namespace
}  // namespace strata
