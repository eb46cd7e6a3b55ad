// BatchStep (continuous batching): sequences decoded together in one forward pass must give
// the logits each gives decoded alone through Session::feed — bit for bit, as the CPU kernels'
// row results do not depend on the batch — while sequences join and leave between steps, at
// different positions (one past gemma3's sliding window), on synthetic models of each family
// (MoE included). Also on a placement over the fake GPU, RAM and DISK, where the step's
// activations are allocated from the device's budget; and the step's refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backends/fake_device.h"
#include "engine/core/error.h"
#include "engine/runtime/batch_step.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/session.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

constexpr int64_t kCtx = 128;

// A sequence of the schedule: its prompt is fed alone at step `start`, then it decodes
// greedily in the batch for `steps` steps.
struct SeqPlan {
    std::vector<int32_t> prompt;
    int start = 0;
    int steps = 0;
};

using Logits = std::vector<float>;

int32_t argmax(const Logits& l) { return static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin()); }

SessionParams params() {
    SessionParams p;
    p.n_ctx = kCtx;
    p.n_batch = 16;
    p.gpu_prefill_min_tokens = 0;
    return p;
}

// The oracle: each sequence alone — its prompt, then one token per feed().
std::vector<Logits> alone(const PlacedModel& placed, const SeqPlan& plan) {
    Session s(placed, params());
    std::vector<Logits> out;
    auto l = s.feed(plan.prompt);
    out.emplace_back(l.begin(), l.end());
    for (int i = 0; i < plan.steps; ++i) {
        const int32_t next = argmax(out.back());
        l = s.feed(std::vector<int32_t>{next});
        out.emplace_back(l.begin(), l.end());
    }
    return out;
}

// The schedule run with BatchStep: logits per sequence, as alone() orders them.
std::vector<std::vector<Logits>> batched(const PlacedModel& placed, const std::vector<SeqPlan>& plans) {
    BatchStep step(placed);
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<std::vector<Logits>> out(plans.size());
    std::vector<int> done(plans.size(), 0);
    for (size_t i = 0; i < plans.size(); ++i) sessions.push_back(std::make_unique<Session>(placed, params()));
    for (int t = 0;; ++t) {
        bool any = false;
        std::vector<Session*> batch;
        std::vector<int32_t> tokens;
        std::vector<size_t> who;
        for (size_t i = 0; i < plans.size(); ++i) {
            if (plans[i].start == t) {
                auto l = sessions[i]->feed(plans[i].prompt);
                out[i].emplace_back(l.begin(), l.end());
                any = true;
            } else if (plans[i].start < t && done[i] < plans[i].steps) {
                batch.push_back(sessions[i].get());
                tokens.push_back(argmax(out[i].back()));
                who.push_back(i);
                ++done[i];
                any = true;
            }
        }
        if (!any) break;
        if (batch.empty()) continue;
        const auto logits = step.decode(batch, tokens);
        const size_t n_vocab = logits.size() / batch.size();
        for (size_t j = 0; j < who.size(); ++j) {
            out[who[j]].emplace_back(logits.begin() + static_cast<long>(j * n_vocab),
                                     logits.begin() + static_cast<long>((j + 1) * n_vocab));
            EXPECT_EQ(batch[j]->tokens().size(), plans[who[j]].prompt.size() + static_cast<size_t>(done[who[j]]));
        }
    }
    return out;
}

// Random prompts of a model's ordinary tokens (past its first three, the control tokens).
struct RandomPrompts {
    RandomPrompts(uint32_t seed, int32_t n_vocab) : rng(seed), tok(3, n_vocab - 1) {}
    std::vector<int32_t> operator()(int n) {
        std::vector<int32_t> p(static_cast<size_t>(n));
        for (int32_t& t : p) t = tok(rng);
        return p;
    }
    std::mt19937 rng;
    std::uniform_int_distribution<int32_t> tok;
};

std::vector<SeqPlan> schedule(int32_t n_vocab) {
    RandomPrompts prompt(7, n_vocab);
    // Joins at steps 0, 0, 2, 3 and 5; leaves after 3 to 8 steps; one prompt past a 64-token window.
    return {{prompt(5), 0, 8}, {prompt(70), 0, 3}, {prompt(11), 2, 6}, {prompt(2), 3, 5}, {prompt(9), 5, 4}};
}

// n sequences joining at steps 0 and 1 (more than one group of rows on a device placement).
std::vector<SeqPlan> crowd(int32_t n_vocab, int n) {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int32_t> tok(3, n_vocab - 1);
    std::vector<SeqPlan> plans;
    for (int i = 0; i < n; ++i) plans.push_back({{tok(rng), tok(rng), tok(rng)}, i % 2, 1 + i % 3});
    return plans;
}

void expect_batched_equals_alone(const PlacedModel& placed, const std::vector<SeqPlan>& plans) {
    const auto got = batched(placed, plans);
    for (size_t i = 0; i < plans.size(); ++i) {
        const auto want = alone(placed, plans[i]);
        ASSERT_EQ(got[i].size(), want.size()) << "sequence " << i;
        for (size_t s = 0; s < want.size(); ++s) {
            ASSERT_EQ(got[i][s], want[s]) << "sequence " << i << ", step " << s;  // bit-identical
        }
    }
}

class BatchStepTest : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        SynthOptions o;
        o.preset = GetParam();
        write_synth_model(o, file_.path());
        model_ = std::make_unique<Model>(file_.path());
    }

    testing::ScratchFile file_{std::string(GetParam()) + "_batch_step.gguf"};
    std::unique_ptr<Model> model_;
    cpu::CpuBackend cpu_{1};
};

TEST_P(BatchStepTest, BatchedEqualsAloneOnTheCpu) {
    const PlacedModel placed(*model_, cpu_);
    expect_batched_equals_alone(placed, schedule(static_cast<int32_t>(model_->config().n_vocab)));
}

TEST_P(BatchStepTest, BatchedEqualsAloneOverFakeGpuRamAndDisk) {
    if (model_->config().is_moe()) GTEST_SKIP() << "MoE placements are tested in placed_moe_test";
    Placement p;
    p.model = model_fingerprint(*model_);
    p.n_ctx = kCtx;
    const int n_layer = static_cast<int>(model_->config().n_layer);
    for (const TensorEntry& t : tensor_table(*model_).tensors) {
        Tier tier = Tier::Ram;
        for (int il = 0; il < n_layer; il += 2) {
            if (t.name.rfind("blk." + std::to_string(il) + ".", 0) == 0) tier = Tier::Gpu;
        }
        if (t.name.rfind("blk." + std::to_string(n_layer - 1) + ".ffn_", 0) == 0 && t.name.find("norm") == std::string::npos) {
            tier = Tier::Disk;
        }
        p.tensors.push_back({t.name, tier});
    }
    p.kv.assign(static_cast<size_t>(n_layer), Tier::Ram);
    for (int il = 0; il < n_layer; il += 2) p.kv[static_cast<size_t>(il)] = Tier::Gpu;
    check_placement_for(p, *model_);
    FakeDeviceBackend fake(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1});
    const PlacedModel placed(*model_, p, TierBackends{.cpu = &cpu_, .gpu = &fake});
    const uint64_t before = fake.stats().used_bytes;
    EXPECT_EQ(BatchStep(placed).max_rows(), BatchStep::kMaxDeviceRows);
    expect_batched_equals_alone(placed, crowd(static_cast<int32_t>(model_->config().n_vocab), 10));
    EXPECT_GT(fake.stats().peak_bytes, before);
    EXPECT_LE(fake.stats().peak_bytes, fake.budget_bytes());

    // The step's activations live in the device pool (allocated through the budget).
    BatchStep step(placed);
    Session a(placed, params()), b(placed, params());
    a.feed(std::vector<int32_t>{5});
    b.feed(std::vector<int32_t>{6});
    const uint64_t used = fake.stats().used_bytes;
    Session* both[] = {&a, &b};
    const int32_t next[] = {7, 8};
    step.decode(both, next);
    EXPECT_GT(step.activation_bytes(&fake), 0u);
    EXPECT_GE(fake.stats().used_bytes, used + step.activation_bytes(&fake));
}

// Everything on the device, the output matrix too: the batch's logits are computed there from
// the hidden rows (no way out to the host and back in) and still equal each sequence's alone.
TEST_P(BatchStepTest, BatchedEqualsAloneAllOnTheFakeGpu) {
    if (model_->config().is_moe()) GTEST_SKIP() << "MoE placements are tested in placed_moe_test";
    Placement p;
    p.model = model_fingerprint(*model_);
    p.n_ctx = kCtx;
    for (const TensorEntry& t : tensor_table(*model_).tensors) p.tensors.push_back({t.name, Tier::Gpu});
    p.kv.assign(static_cast<size_t>(model_->config().n_layer), Tier::Gpu);
    check_placement_for(p, *model_);
    FakeDeviceBackend fake(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1});
    const PlacedModel placed(*model_, p, TierBackends{.cpu = &cpu_, .gpu = &fake});
    ASSERT_EQ(placed.output().backend, &fake);
    expect_batched_equals_alone(placed, crowd(static_cast<int32_t>(model_->config().n_vocab), 10));
    EXPECT_LE(fake.stats().peak_bytes, fake.budget_bytes());
}

TEST_P(BatchStepTest, RefusesForeignSessionsAndFullContexts) {
    const PlacedModel placed(*model_, cpu_);
    const PlacedModel other(*model_, cpu_);
    BatchStep step(placed);
    Session a(placed, params()), b(other, params());
    a.feed(std::vector<int32_t>{5, 6});
    b.feed(std::vector<int32_t>{5, 6});
    Session* mixed[] = {&a, &b};
    const int32_t two[] = {7, 8};
    EXPECT_THROW(step.decode(mixed, two), ArgumentError);
    EXPECT_EQ(a.tokens().size(), 2u);
    Session* one[] = {&a};
    EXPECT_THROW(step.decode(one, two), ArgumentError);  // 1 session, 2 tokens

    SessionParams small = params();
    small.n_ctx = 4;
    Session full(placed, small), fresh(placed, small);
    full.feed(std::vector<int32_t>{1, 2, 3, 4});
    fresh.feed(std::vector<int32_t>{1});
    Session* with_full[] = {&fresh, &full};
    EXPECT_THROW(step.decode(with_full, two), ArgumentError);
    EXPECT_EQ(fresh.tokens().size(), 1u);  // nobody took a token
    EXPECT_EQ(fresh.kv_cache().n_used(), 1);
}

// step_rows (Dynamic SplitFuse on host placements): a decoding session's token and two other
// sessions' prompt chunks in one pass give each the logits it gets alone, bit for bit, although
// the chunks are cut otherwise than Session::feed cuts the same prompt (12 + 8 tokens against
// its n_batch of 16): the host kernels' row results depend neither on the rows beside them nor
// on the pass a row is in.
TEST_P(BatchStepTest, PromptChunksBesideDecodeTokensEqualAlone) {
    const PlacedModel placed(*model_, cpu_);
    const int32_t n_vocab = static_cast<int32_t>(model_->config().n_vocab);
    RandomPrompts prompt(5, n_vocab);
    const std::vector<int32_t> pa = prompt(5), pb = prompt(20), pc = prompt(3), a_next = prompt(2);

    BatchStep step(placed);
    ASSERT_TRUE(step.takes_prompt_rows());
    Session a(placed, params()), b(placed, params()), c(placed, params());
    a.feed(pa);
    const std::span<const int32_t> b_all(pb);
    Session* three[] = {&a, &b, &c};
    const std::span<const int32_t> pass1[] = {{&a_next[0], 1}, b_all.first(12), pc};
    const auto l1 = step.step_rows(three, pass1);
    const size_t v = static_cast<size_t>(n_vocab);
    ASSERT_EQ(l1.size(), 3 * v);
    const Logits a1(l1.begin(), l1.begin() + static_cast<long>(v));
    const Logits c1(l1.begin() + static_cast<long>(2 * v), l1.end());
    Session* two[] = {&a, &b};
    const std::span<const int32_t> pass2[] = {{&a_next[1], 1}, b_all.subspan(12)};
    const auto l2 = step.step_rows(two, pass2);
    const Logits a2(l2.begin(), l2.begin() + static_cast<long>(v)), b2(l2.begin() + static_cast<long>(v), l2.end());
    EXPECT_EQ(a.tokens().size(), 7u);
    EXPECT_EQ(b.tokens().size(), 20u);
    EXPECT_EQ(c.tokens().size(), 3u);

    Session ra(placed, params()), rb(placed, params()), rc(placed, params());
    ra.feed(pa);
    auto la = ra.feed(std::vector<int32_t>{a_next[0]});
    EXPECT_EQ(a1, Logits(la.begin(), la.end())) << "the decode token beside two prompt chunks";
    la = ra.feed(std::vector<int32_t>{a_next[1]});
    EXPECT_EQ(a2, Logits(la.begin(), la.end()));
    const auto lb = rb.feed(pb);
    EXPECT_EQ(b2, Logits(lb.begin(), lb.end())) << "a prompt fed in two fused chunks";
    const auto lc = rc.feed(pc);
    EXPECT_EQ(c1, Logits(lc.begin(), lc.end())) << "a prompt fed whole beside others";
}

TEST_P(BatchStepTest, PromptRowsRefusedBeyondTheStepOrTheCacheOrOnADevice) {
    const PlacedModel placed(*model_, cpu_);
    BatchStep step(placed);
    Session a(placed, params()), b(placed, params());
    // One token more than a pass may store in the cache (a sliding-window ring's batch, else the
    // context).
    const std::vector<int32_t> past_batch(static_cast<size_t>(a.kv_cache().max_batch() + 1), 5), forty(40, 6);
    Session* one[] = {&a};
    const std::span<const int32_t> too_long[] = {past_batch};
    EXPECT_THROW(step.step_rows(one, too_long), ArgumentError);
    Session* both[] = {&a, &b};
    SessionParams wide = params();
    wide.n_batch = 64;
    Session c(placed, wide), d(placed, wide);
    Session* wide_two[] = {&c, &d};
    const std::span<const int32_t> over[] = {forty, forty};  // 80 rows > kMaxRows
    EXPECT_THROW(step.step_rows(wide_two, over), ArgumentError);
    const std::span<const int32_t> short_pair[] = {std::span<const int32_t>(forty).first(2)};
    EXPECT_THROW(step.step_rows(both, short_pair), ArgumentError);  // 2 sessions, 1 chunk
    EXPECT_EQ(a.tokens().size(), 0u);
    EXPECT_EQ(c.tokens().size(), 0u);
    EXPECT_EQ(c.kv_cache().n_used(), 0);

    if (model_->config().is_moe()) return;
    Placement p;
    p.model = model_fingerprint(*model_);
    p.n_ctx = kCtx;
    for (const TensorEntry& t : tensor_table(*model_).tensors) p.tensors.push_back({t.name, Tier::Gpu});
    p.kv.assign(static_cast<size_t>(model_->config().n_layer), Tier::Gpu);
    FakeDeviceBackend fake(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1});
    const PlacedModel on_gpu(*model_, p, TierBackends{.cpu = &cpu_, .gpu = &fake});
    BatchStep device_step(on_gpu);
    EXPECT_FALSE(device_step.takes_prompt_rows());
    Session e(on_gpu, params());
    Session* dev[] = {&e};
    const std::span<const int32_t> two_rows[] = {std::span<const int32_t>(forty).first(2)};
    EXPECT_THROW(device_step.step_rows(dev, two_rows), ArgumentError);
}

INSTANTIATE_TEST_SUITE_P(Presets, BatchStepTest,
                         ::testing::Values("tiny", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3", "tiny-qwen3moe"),
                         [](const auto& info) {
                             std::string s = info.param;
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

}  // namespace
}  // namespace strata
