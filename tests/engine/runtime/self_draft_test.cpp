// The self-draft of speculative decoding (SessionParams::gpu_ffn_only, Runtime::
// new_self_draft_session) on synthetic F16 models and the fake GPU. Oracle: the same model with
// the skipped weights zeroed in a copy of the file, run as an ordinary target — the draft of a
// placement with some FFNs in RAM is that model without those FFNs (their ffn_down zeroed), and
// the draft of a hot/cold split is the model whose cold neurons' ffn_down columns are zero. The
// draft also differs from the target (something was skipped), greedy output with --spec self
// equals output without, and placements the draft cannot use are refused with the reason.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backends/fake_device.h"
#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/hot_cold_ffn.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/profile_run.h"
#include "engine/runtime/runtime.h"
#include "engine/runtime/session.h"
#include "engine/runtime/sparse_ffn.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "offload/placement.h"
#include "tests/engine/runtime/draft_fixture.h"
#include "tests/engine/runtime/rel_diff.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

using testing::rel_max_diff;

std::vector<int32_t> self_draft_tokens(size_t n, int32_t n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    return t;
}

// A copy of `src` at `dst` whose F16 tensor `name` [n_ff, n_embd] (ffn_down) has columns `cols`
// zeroed (all of them when `cols` is empty).
void zero_down_columns(const std::string& src, const std::string& dst, const std::string& name,
                       const std::vector<int32_t>& cols) {
    if (!std::filesystem::exists(dst)) std::filesystem::copy_file(src, dst);
    uint64_t offset = 0;
    int64_t ne0 = 0, rows = 0;
    {
        const GgufFile file(src);
        const TensorInfo* t = file.find_tensor(name);
        ASSERT_NE(t, nullptr) << name;
        ASSERT_EQ(t->type, GgmlType::F16) << name;
        offset = t->file_offset, ne0 = t->ne[0], rows = t->n_rows();
    }
    std::fstream f(dst, std::ios::in | std::ios::out | std::ios::binary);
    const uint16_t zero = 0;
    for (int64_t r = 0; r < rows; ++r) {
        const auto row = static_cast<std::streamoff>(offset + static_cast<uint64_t>(r * ne0) * 2);
        if (cols.empty()) {
            const std::vector<char> zeros(static_cast<size_t>(ne0) * 2, 0);
            f.seekp(row);
            f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
            continue;
        }
        for (int32_t c : cols) {
            f.seekp(row + static_cast<std::streamoff>(c) * 2);
            f.write(reinterpret_cast<const char*>(&zero), 2);
        }
    }
    ASSERT_TRUE(f.good());
}

std::string ffn_down_name(int il) { return "blk." + std::to_string(il) + ".ffn_down.weight"; }

// Every tensor and the KV on the GPU tier but the FFNs of the layers `in_ram` marks.
Placement ffns_in_ram(const Model& model, const std::vector<bool>& in_ram) {
    Placement p;
    p.model = model_fingerprint(model);
    p.n_ctx = 64;
    for (const TensorEntry& t : tensor_table(model).tensors) {
        Tier tier = Tier::Gpu;
        for (size_t il = 0; il < in_ram.size(); ++il) {
            if (in_ram[il] && t.name.starts_with("blk." + std::to_string(il) + ".ffn_")) tier = Tier::Ram;
        }
        p.tensors.push_back({t.name, tier});
    }
    p.kv.assign(static_cast<size_t>(model.config().n_layer), Tier::Gpu);
    return p;
}

// Logits after each step: a prompt batch of 6, then 3 single tokens.
std::vector<std::vector<float>> run_steps(const PlacedModel& placed, SessionParams params, const std::vector<int32_t>& tokens) {
    params.n_ctx = 64;
    params.n_batch = 8;
    Session s(placed, params);
    std::vector<std::vector<float>> out;
    auto keep = [&](std::span<const float> l) { out.emplace_back(l.begin(), l.end()); };
    keep(s.feed({tokens.data(), 6}));
    for (size_t i = 6; i < 9; ++i) keep(s.feed({tokens.data() + i, 1}));
    return out;
}

class SelfDraftTest : public ::testing::TestWithParam<const char*> {
  protected:
    void SetUp() override {
        file_ = std::make_unique<testing::ScratchFile>(std::string("self_draft_") + GetParam() + ".gguf");
        SynthOptions o;
        o.preset = GetParam();
        o.type = SynthType::F16;  // columns of ffn_down can be zeroed in place
        write_synth_model(o, file_->path());
        model_ = std::make_unique<Model>(file_->path());
    }
    int32_t n_vocab() const { return static_cast<int32_t>(model_->config().n_vocab); }
    int n_layer() const { return model_->config().n_layer; }
    cpu::CpuBackend cpu_{cpu::CpuBackendOptions{.n_threads = 2, .quantize_activations = false}};
    std::unique_ptr<testing::ScratchFile> file_;
    std::unique_ptr<Model> model_;
};

TEST_P(SelfDraftTest, SkipsTheFfnsInRamAsIfTheirWeightsWereZero) {
    std::vector<bool> in_ram;
    for (int il = 0; il < n_layer(); ++il) in_ram.push_back(il % 2 == 1);
    const testing::ScratchFile zeroed(std::string("self_draft_zeroed_") + GetParam() + ".gguf");
    for (int il = 0; il < n_layer(); ++il) {
        if (in_ram[static_cast<size_t>(il)]) zero_down_columns(file_->path(), zeroed.path(), ffn_down_name(il), {});
    }
    const Model without(zeroed.path());
    FakeDeviceBackend fake(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1, .quantize_activations = false});
    const PlacedModel placed(*model_, ffns_in_ram(*model_, in_ram), TierBackends{.cpu = &cpu_, .gpu = &fake});
    const PlacedModel placed_without(without, ffns_in_ram(without, in_ram), TierBackends{.cpu = &cpu_, .gpu = &fake});
    const auto tokens = self_draft_tokens(9, n_vocab(), 3);
    SessionParams draft_params;
    draft_params.gpu_ffn_only = true;
    const auto draft = run_steps(placed, draft_params, tokens);
    const auto oracle = run_steps(placed_without, SessionParams{}, tokens);
    const auto target = run_steps(placed, SessionParams{}, tokens);
    for (size_t i = 0; i < draft.size(); ++i) {
        EXPECT_LT(rel_max_diff(draft[i], oracle[i]), 1e-5) << "step " << i;
        EXPECT_GT(rel_max_diff(draft[i], target[i]), 1e-2) << "step " << i << ": the draft skipped nothing";
    }
}

TEST_P(SelfDraftTest, HotRangeOnlyIsTheModelWithItsColdNeuronsZeroed) {
    ProfileParams pp;
    pp.n_ctx = 32;
    pp.n_batch = 32;
    const ActivationProfile profile = profile_activations(*model_, cpu_, self_draft_tokens(96, n_vocab(), 11), pp);
    const int64_t n_ff = model_->weights().layers[0].ffn_gate.ne[1];
    std::vector<int64_t> hot;  // none, some and all, by layer
    for (int il = 0; il < n_layer(); ++il) hot.push_back(il % 3 == 0 ? 0 : il % 3 == 1 ? (n_ff / 3) / 32 * 32 : n_ff);
    const std::vector<bool> all_in_ram(static_cast<size_t>(n_layer()), true);
    FakeDeviceBackend fake(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1, .quantize_activations = false});
    const PlacedModel placed(*model_, ffns_in_ram(*model_, all_in_ram), TierBackends{.cpu = &cpu_, .gpu = &fake});
    const SparseFfn sparse(placed, profile, 0.5, copy_every_layer(GgmlType::F32));
    const HotColdFfn order(placed, sparse, profile, {hot, &fake, GgmlType::F32, false});  // the cold neurons

    const testing::ScratchFile zeroed(std::string("self_draft_cold_") + GetParam() + ".gguf");
    for (int il = 0; il < n_layer(); ++il) {
        const HotColdFfn::Layer& l = order.layer(il);
        ASSERT_TRUE(l.split);
        if (l.hot == 0) {
            zero_down_columns(file_->path(), zeroed.path(), ffn_down_name(il), {});
        } else if (l.hot < n_ff) {
            zero_down_columns(file_->path(), zeroed.path(), ffn_down_name(il), l.cold_index);
        }
    }
    const Model cold_zero(zeroed.path());
    const PlacedModel placed_zero(cold_zero, ffns_in_ram(cold_zero, all_in_ram), TierBackends{.cpu = &cpu_, .gpu = &fake});
    const SparseFfn sparse_zero(placed_zero, profile, 0.5, copy_every_layer(GgmlType::F32));
    const auto tokens = self_draft_tokens(9, n_vocab(), 7);
    // Hot ranges dense, and thresholded on the device (decode counts there): the same function
    // as the cold-zeroed model's split either way.
    for (bool mask_hot : {false, true}) {
        SCOPED_TRACE(mask_hot ? "thresholded hot range" : "dense hot range");
        const HotColdFfn hc(placed, sparse, profile, {hot, &fake, GgmlType::F32, mask_hot});
        const HotColdFfn hc_zero(placed_zero, sparse_zero, profile, {hot, &fake, GgmlType::F32, mask_hot});
        ASSERT_EQ(hc.masks_hot(), mask_hot);
        SessionParams with{.sparse = &sparse, .hot_cold = &hc};
        SessionParams draft_params = with;
        draft_params.gpu_ffn_only = true;
        const auto draft = run_steps(placed, draft_params, tokens);
        const auto oracle = run_steps(placed_zero, SessionParams{.sparse = &sparse_zero, .hot_cold = &hc_zero}, tokens);
        const auto target = run_steps(placed, with, tokens);
        for (size_t i = 0; i < draft.size(); ++i) {
            EXPECT_LT(rel_max_diff(draft[i], oracle[i]), 1e-5) << "step " << i;
            EXPECT_GT(rel_max_diff(draft[i], target[i]), 1e-2) << "step " << i << ": the draft skipped nothing";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Archs, SelfDraftTest, ::testing::Values("tiny", "tiny-gemma3"));

// Through the runtime: greedy output with --spec self equals output without, some drafts are
// kept and some rejected; placements the self-draft cannot use are refused, saying why.
TEST(SelfDraftRuntime, GreedyOutputIsTheTargetsAndBadPlacementsAreRefused) {
    const auto tiny = testing::tiny_model_file("self_draft_runtime.gguf", 0, 0);
    const testing::ScratchFile& file = *tiny;
    RuntimeOptions o;
    o.gpu = "fake";
    o.gpu_mem = 1ull << 30;
    o.placer = Placer::Builtin;
    o.session.n_ctx = 128;
    o.session.n_batch = 16;
    o.session.n_sequences = 2;  // the target's session and the draft's, as load_engines asks
    const int n_layer = Model(file.path()).config().n_layer;
    o.rules.gpu_layers = n_layer - 1;  // the last layer in RAM: its FFN is what the draft skips
    const Runtime runtime(file.path(), o);
    std::unique_ptr<Session> draft = runtime.new_self_draft_session();
    std::unique_ptr<Session> session = runtime.new_session();
    const auto prompt = self_draft_tokens(12, static_cast<int32_t>(runtime.model().config().n_vocab), 5);
    GenerateParams gp;
    gp.n_predict = 40;
    gp.stop_at_eog = false;
    gp.sampler.temperature = 0.0f;
    auto tokens_of = [&](const GenerateParams& p) {
        session->clear();
        const GenerateStats st = generate(*session, prompt, p, [](std::string_view) { return true; });
        return std::make_pair(std::vector<int32_t>(session->tokens().begin(), session->tokens().end()), st.spec);
    };
    const auto base = tokens_of(gp).first;
    gp.spec.mode = SpecMode::Self;
    gp.spec.draft_max = 4;
    gp.draft = draft.get();
    const auto [got, stats] = tokens_of(gp);
    EXPECT_EQ(got, base);
    EXPECT_GT(stats.accepted, 0);
    EXPECT_LT(stats.accepted, stats.proposed) << "every draft kept: the rollback went untested";

    // Placements the self-draft cannot use: each refused with its reason.
    const auto refused = [&](const RuntimeOptions& options, const std::string& reason) {
        try {
            const Runtime r(file.path(), options);
            r.new_self_draft_session();
            ADD_FAILURE() << "a self-draft was made where " << reason << " was expected";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
        }
    };
    RuntimeOptions all = o;  // every FFN on the GPU: the draft would be the target itself
    all.rules.gpu_layers = -1;
    refused(all, "the target itself");
    RuntimeOptions none = o;  // no GPU: no FFN work to draft with
    none.gpu = "none";
    none.gpu_mem = 0;
    none.rules = PlacementRules{};
    refused(none, "keeps none there");
    // FFNs on the GPU but the last layer's matrices streamed from disk: its reads cannot be skipped.
    RuntimeOptions disk = o;
    disk.ram_mem = 800ull << 10;  // the last layer's small tensors, KV and staging
    ASSERT_NE(Runtime(file.path(), disk).placed().disk_stream(), nullptr);
    refused(disk, "streams weights from disk");
    EXPECT_EQ(parse_spec_mode("self"), SpecMode::Self);
    EXPECT_EQ(spec_mode_name(SpecMode::Self), "self");
}

}  // namespace
}  // namespace strata
