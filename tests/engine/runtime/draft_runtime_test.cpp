// A target and its draft through one budget (engine/runtime/draft_runtime.h), on tiny synthetic
// models and the fake GPU: the draft's GPU share is its footprint, the two GPU budgets add up to
// --gpu-mem, the target's RAM budget is --ram-mem less what the draft holds; a draft of another
// vocabulary is refused before anything is loaded.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/runtime/draft_runtime.h"
#include "tests/engine/runtime/draft_fixture.h"

namespace strata {
namespace {

TEST(DraftRuntime, TheDraftAndTheTargetShareOneBudget) {
    const auto target = testing::tiny_model_file("draft_rt_target.gguf", 0, 0);
    const auto draft = testing::tiny_model_file("draft_rt_draft.gguf", 1, 0);
    RuntimeOptions o;
    o.gpu = "fake";
    o.gpu_mem = 1ull << 30;
    o.ram_mem = 512ull << 20;
    o.placer = Placer::Builtin;
    o.session.n_ctx = 128;
    o.session.n_batch = 64;
    const LoadedPair pair = load_target_and_draft(target->path(), o, DraftLoad{draft->path()});
    const uint64_t need = draft_gpu_need(pair.draft->model(), o.session);
    EXPECT_GT(need, 256ull << 20);
    EXPECT_EQ(pair.draft->gpu_budget(), need);
    EXPECT_EQ(pair.draft->gpu_budget() + pair.target->gpu_budget(), o.gpu_mem);
    EXPECT_EQ(pair.target->placement().budgets.ram_bytes, o.ram_mem - runtime_ram_bytes(*pair.draft));
    // The tiny draft fits its share: every weight on the GPU.
    EXPECT_EQ(pair.draft->placed().stats().ram_weight_bytes, 0u);
}

TEST(DraftRuntime, TheDraftsShareIsAtMostHalfAnExplicitBudget) {
    EXPECT_EQ(draft_gpu_share(1ull << 30, 900ull << 20), 512ull << 20);
    EXPECT_EQ(draft_gpu_share(1ull << 30, 300ull << 20), 300ull << 20);
    EXPECT_EQ(draft_gpu_share(0, 900ull << 20), 900ull << 20);
    EXPECT_THROW(draft_gpu_share(256ull << 20, 1), BudgetError);
}

TEST(DraftRuntime, RefusesAnotherVocabularyBeforeLoading) {
    const auto target = testing::tiny_model_file("draft_rt_target2.gguf", 0, 0);
    const auto other = testing::tiny_model_file("draft_rt_other.gguf", 1, 600);
    RuntimeOptions o;
    o.gpu = "none";
    try {
        load_target_and_draft(target->path(), o, DraftLoad{other->path()});
        FAIL() << "a draft of 600 tokens was loaded for a target of 512";
    } catch (const ArgumentError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(other->path()), std::string::npos) << what;
        EXPECT_NE(what.find(target->path()), std::string::npos) << what;
    }
}

}  // namespace
}  // namespace strata
