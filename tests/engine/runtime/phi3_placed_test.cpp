// Phi-3's fused tensors in the runtime: q/k/v and gate/up are row views of attn_qkv and ffn_up
// (no copy); a placement names only the file tensors and moves a fused one whole, its views with
// it, to the (fake) GPU, RAM or DISK, with the same logits as all in RAM (the same kernels on the
// same inputs: exact); the KV cache is sized from attn_qkv's K and V rows; the planner never
// splits phi3's FFN (gate and up are one tensor) and its placement runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/fake_device.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/session.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/runtime/moe_plan_helper.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

const std::vector<int32_t> kPrompt = {1, 17, 300, 42, 7, 250, 99, 3, 480, 12, 77};

// Logits of the prompt's last token and of 3 greedy steps after it.
std::vector<std::vector<float>> run(const PlacedModel& placed) {
    SessionParams params;
    params.n_ctx = 64;
    params.n_batch = 4;
    Session session(placed, params);
    std::vector<std::vector<float>> out;
    auto logits = session.feed(kPrompt);
    out.emplace_back(logits.begin(), logits.end());
    for (int s = 0; s < 3; ++s) {
        const auto next = static_cast<int32_t>(std::max_element(out.back().begin(), out.back().end()) - out.back().begin());
        logits = session.feed(std::vector<int32_t>{next});
        out.emplace_back(logits.begin(), logits.end());
    }
    return out;
}

class Phi3Placed : public ::testing::Test {
  protected:
    void SetUp() override {
        SynthOptions options;
        options.preset = "tiny-phi3";
        write_synth_model(options, file_.path());
        model_ = std::make_unique<Model>(file_.path());
        reference_ = run(PlacedModel(*model_, cpu_));
    }

    uint64_t bytes_of(const std::string& name) const { return model_->file().tensor(name).n_bytes; }

    // Runs `placement` on the fake GPU + CPU; the logits must equal the all-RAM ones.
    ResidencyStats expect_same_logits(const Placement& placement) {
        check_placement_for(placement, *model_);
        FakeDeviceBackend gpu(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1, .quantize_activations = true});
        const PlacedModel placed(*model_, placement, {&cpu_, &gpu}, DiskStreamOptions{});
        EXPECT_EQ(run(placed), reference_);
        return placed.stats();
    }

    testing::ScratchFile file_{"tiny_phi3_placed.gguf"};
    std::unique_ptr<Model> model_;
    cpu::CpuBackend cpu_{2};
    std::vector<std::vector<float>> reference_;
};

TEST_F(Phi3Placed, WeightsAreRowViewsOfTheFusedTensors) {
    const ModelConfig& c = model_->config();
    for (int il = 0; il < c.n_layer; ++il) {
        const LayerWeights& l = model_->weights().layers[static_cast<size_t>(il)];
        const TensorInfo& qkv = model_->file().tensor("blk." + std::to_string(il) + ".attn_qkv.weight");
        const TensorInfo& up = model_->file().tensor("blk." + std::to_string(il) + ".ffn_up.weight");
        const uint64_t qkv_row = row_bytes(qkv.type, qkv.ne[0]), up_row = row_bytes(up.type, up.ne[0]);
        const auto at = [](const void* p) { return p; };
        EXPECT_EQ(at(l.attn_q.data), at(qkv.data));
        EXPECT_EQ(at(l.attn_k.data), at(qkv.data + qkv_row * 256));  // after n_head*head_dim = 256 Q rows
        EXPECT_EQ(at(l.attn_v.data), at(qkv.data + qkv_row * (256 + 128)));
        EXPECT_EQ(l.attn_q.ne[1], 256);
        EXPECT_EQ(l.attn_k.ne[1], 128);
        EXPECT_EQ(l.attn_v.ne[1], 128);
        EXPECT_EQ(at(l.ffn_gate.data), at(up.data));
        EXPECT_EQ(at(l.ffn_up.data), at(up.data + up_row * 768));  // after n_ff gate rows
        EXPECT_EQ(l.ffn_gate.ne[1], 768);
        EXPECT_EQ(l.ffn_up.ne[1], 768);
        EXPECT_EQ(l.ffn_gate.type, up.type);
        EXPECT_EQ(l.attn_v.type, qkv.type);
    }
}

TEST_F(Phi3Placed, FusedTensorsMoveWholeToGpuRamAndDisk) {
    Placement p;
    p.model = model_fingerprint(*model_);
    p.n_ctx = 64;
    for (const TensorEntry& t : tensor_table(*model_).tensors) p.tensors.push_back({t.name, Tier::Ram});
    p.kv.assign(4, Tier::Ram);
    p.kv[0] = Tier::Gpu;
    const auto set = [&](const std::string& name, Tier tier) {
        for (TensorPlacement& t : p.tensors)
            if (t.name == name) t.tier = tier;
    };
    uint64_t gpu = 0, disk = 0;
    for (const char* name : {"blk.0.attn_qkv.weight", "blk.0.attn_output.weight", "blk.2.ffn_up.weight"}) {
        set(name, Tier::Gpu);
        gpu += bytes_of(name);
    }
    for (const char* name : {"blk.1.attn_qkv.weight", "blk.1.ffn_up.weight", "blk.3.ffn_up.weight", "blk.3.ffn_down.weight"}) {
        set(name, Tier::Disk);
        disk += bytes_of(name);
    }
    const ResidencyStats stats = expect_same_logits(p);
    EXPECT_EQ(stats.gpu_weight_bytes, gpu);
    EXPECT_EQ(stats.disk_weight_bytes, disk);
}

TEST_F(Phi3Placed, KvCacheIsSizedFromTheFusedQkv) {
    TensorTable table = tensor_table(*model_);
    table.attn_window.clear();  // full attention: n_ctx cells of K (128 wide) and V (128 wide)
    EXPECT_EQ(kv_bytes_per_layer(table, 2, 100, GgmlType::F16), 100u * 2u * row_bytes(GgmlType::F16, 128));
    const TensorTable windowed = tensor_table(*model_);  // window 64 on every layer: a ring
    EXPECT_LT(kv_bytes_per_layer(windowed, 2, 1000, GgmlType::F16), kv_bytes_per_layer(table, 2, 1000, GgmlType::F16));
    for (TensorEntry& t : table.tensors)
        if (t.name == "blk.1.attn_qkv.weight") t.ne[1] = 448;  // not (4 + 2*2) heads of 64
    try {
        kv_bytes_per_layer(table, 1, 100, GgmlType::F16);
        ADD_FAILURE() << "a fused qkv of the wrong width was sized";
    } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("layer 1"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("attn_qkv"), std::string::npos) << e.what();
    }
}

TEST_F(Phi3Placed, PlannerKeepsTheFfnWholeAndItsPlacementRuns) {
    const TensorTable table = tensor_table(*model_);
    uint64_t total = 0;
    for (const TensorEntry& t : table.tensors) total += t.bytes;
    Placement p = test::plan_moe_for_test(table, Budgets{.gpu_bytes = total / 2, .ram_bytes = 1ull << 30});
    p.model = model_fingerprint(*model_);
    EXPECT_TRUE(p.ffn_splits.empty());
    EXPECT_TRUE(std::any_of(p.tensors.begin(), p.tensors.end(), [](const TensorPlacement& t) { return t.tier == Tier::Gpu; }));
    const ResidencyStats stats = expect_same_logits(p);
    EXPECT_GT(stats.gpu_weight_bytes, 0u);
    EXPECT_GT(stats.ram_weight_bytes, 0u);
}

}  // namespace
}  // namespace strata
