// Speculation with a draft model (engine/runtime/draft_model.h, draft_runtime.h) on synthetic
// models that share the tokenizer: greedy output with a draft equals output without it (a
// 1-layer draft that is often wrong, and the target itself as a draft that is always right);
// sampled output follows the target's own sampling distribution (chi-square over the first
// four tokens against the probabilities the plain sampler gives); a draft with another
// vocabulary is refused naming both files. (Budgets: draft_runtime_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/draft_model.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "engine/sampler/sampler.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

std::vector<int32_t> random_tokens(size_t n, int32_t n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    return t;
}

std::unique_ptr<testing::ScratchFile> synth(const std::string& name, int64_t n_layer, int64_t n_vocab) {
    auto file = std::make_unique<testing::ScratchFile>(name);
    SynthOptions o;
    o.preset = "tiny";
    o.n_layer = n_layer;
    o.n_vocab = n_vocab;
    write_synth_model(o, file->path());
    return file;
}

class DraftModelTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        target_file_ = synth("draft_test_target.gguf", 0, 0);
        draft_file_ = synth("draft_test_draft.gguf", 1, 0);
        draft3_file_ = synth("draft_test_draft3.gguf", 3, 0);
        target_ = std::make_unique<Model>(target_file_->path());
        draft_ = std::make_unique<Model>(draft_file_->path());
        draft3_ = std::make_unique<Model>(draft3_file_->path());
    }
    static void TearDownTestSuite() {
        target_.reset();
        draft_.reset();
        draft3_.reset();
        target_file_.reset();
        draft_file_.reset();
        draft3_file_.reset();
    }
    int32_t n_vocab() const { return static_cast<int32_t>(target_->config().n_vocab); }
    SessionParams session_params(int64_t n_batch = 16) const {
        SessionParams sp;
        sp.n_ctx = 128;
        sp.n_batch = n_batch;
        return sp;
    }
    // Generation on a cleared target session; `draft` (may be null) keeps its own session. The
    // session holds every generated token but the last (which is never fed).
    static std::vector<int32_t> generate_tokens(Session& session, const std::vector<int32_t>& prompt,
                                                const GenerateParams& gp, Session* draft, GenerateStats* stats = nullptr) {
        session.clear();
        GenerateParams p = gp;
        p.draft = draft;
        const GenerateStats st = generate(session, prompt, p, [](std::string_view) { return true; });
        if (stats != nullptr) *stats = st;
        return {session.tokens().begin() + static_cast<std::ptrdiff_t>(prompt.size()), session.tokens().end()};
    }

    static inline std::unique_ptr<testing::ScratchFile> target_file_, draft_file_, draft3_file_;
    static inline std::unique_ptr<Model> target_, draft_, draft3_;  // 4, 1 and 3 layers
    cpu::CpuBackend cpu_{1};  // one thread: many tiny passes, no OpenMP hand-offs
};

TEST_F(DraftModelTest, GreedyOutputWithADraftEqualsOutputWithout) {
    const std::vector<int32_t> prompt = random_tokens(20, n_vocab(), 5);
    Session session(*target_, cpu_, session_params());
    int64_t accepted = 0, rejected = 0;
    for (float penalty : {1.0f, 1.3f}) {
        GenerateParams gp;
        gp.n_predict = 40;
        gp.stop_at_eog = false;
        gp.sampler.temperature = 0.0f;
        gp.sampler.repeat_penalty = penalty;
        const std::vector<int32_t> base = generate_tokens(session, prompt, gp, nullptr);
        ASSERT_EQ(base.size(), 39u);
        for (const Model* drafter : {draft_.get(), target_.get()}) {
            for (int64_t draft_max : {1, 4, 15}) {
                Session draft(*drafter, cpu_, session_params());
                gp.spec.mode = SpecMode::Draft;
                gp.spec.draft_max = draft_max;
                GenerateStats st;
                const std::vector<int32_t> got = generate_tokens(session, prompt, gp, &draft, &st);
                SCOPED_TRACE(::testing::Message() << "draft " << (drafter == target_.get() ? "target" : "1-layer")
                                                  << " draft_max " << draft_max << " penalty " << penalty);
                EXPECT_EQ(got, base);
                if (drafter == target_.get()) {
                    EXPECT_EQ(st.spec.accepted, st.spec.proposed);
                }
                accepted += st.spec.accepted;
                rejected += st.spec.proposed - st.spec.accepted;
            }
        }
    }
    EXPECT_GT(accepted, 0) << "no draft was ever accepted";
    EXPECT_GT(rejected, 0) << "no draft was ever rejected: the rollback went untested";
}

// The exact probability of each sequence of n tokens after `prompt` under the plain sampler.
std::map<std::vector<int32_t>, double> sequence_law(const Model& model, Backend& cpu, const SessionParams& sp,
                                                    const std::vector<int32_t>& prompt, const SamplerParams& params,
                                                    int n) {
    std::map<std::vector<int32_t>, double> law{{{}, 1.0}};
    for (int step = 0; step < n; ++step) {
        std::map<std::vector<int32_t>, double> next;
        for (const auto& [prefix, pr] : law) {
            Session s(model, cpu, sp);
            std::vector<int32_t> context = prompt;
            context.insert(context.end(), prefix.begin(), prefix.end());
            const std::span<const float> logits = s.feed(context);
            Sampler sampler(params, static_cast<int32_t>(logits.size()));
            for (int32_t t : context) sampler.accept(t);
            for (const Candidate& c : sampler.candidates(logits)) {
                std::vector<int32_t> longer = prefix;
                longer.push_back(c.id);
                next[longer] = pr * c.p;
            }
        }
        law = std::move(next);
    }
    return law;
}

TEST_F(DraftModelTest, SampledOutputWithADraftFollowsTheTargetsDistribution) {
    const std::vector<int32_t> prompt = random_tokens(10, n_vocab(), 6);
    GenerateParams gp;
    gp.n_predict = 4;
    gp.stop_at_eog = false;
    gp.sampler.temperature = 1.5f;
    gp.sampler.top_k = 2;
    gp.sampler.top_p = 1.0f;
    gp.sampler.min_p = 0.0f;
    gp.sampler.repeat_penalty = 1.5f;
    // Five tokens generated, the first four (the session's) counted: 16 sequences.
    gp.n_predict = 5;
    const auto law = sequence_law(*target_, cpu_, session_params(), prompt, gp.sampler, 4);
    ASSERT_EQ(law.size(), 16u);
    // The 3-layer draft shares the target's first layers (the synth seeds weights by name): it
    // proposes tokens the target may keep, and others.
    Session session(*target_, cpu_, session_params()), draft(*draft3_, cpu_, session_params());
    gp.spec.mode = SpecMode::Draft;
    gp.spec.draft_max = 3;
    constexpr int kRuns = 1000;
    std::map<std::vector<int32_t>, int> count;
    SpecStats total;
    for (int r = 0; r < kRuns; ++r) {
        gp.sampler.seed = static_cast<uint32_t>(1000 + r);
        GenerateStats st;
        ++count[generate_tokens(session, prompt, gp, &draft, &st)];
        total.proposed += st.spec.proposed;
        total.accepted += st.spec.accepted;
    }
    double chi = 0;
    for (const auto& [seq, pr] : law) {
        const double want = pr * kRuns;
        const double got = count.count(seq) ? count[seq] : 0;
        chi += (got - want) * (got - want) / want;
    }
    for (const auto& [seq, c] : count) EXPECT_TRUE(law.count(seq)) << "a sequence the target's sampler never makes";
    const int df = static_cast<int>(law.size()) - 1;
    const double a = 2.0 / (9.0 * df);
    const double critical = df * std::pow(1.0 - a + 3.090232 * std::sqrt(a), 3.0);  // p = 0.001
    EXPECT_LT(chi, critical);
    EXPECT_GT(total.accepted, 0);
    EXPECT_LT(total.accepted, total.proposed);  // rejections and resamples happened
}

TEST_F(DraftModelTest, RefusesADraftWithAnotherVocabularyNamingBothFiles) {
    const auto other = synth("draft_test_other_vocab.gguf", 1, 600);
    const Model m(other->path());
    try {
        check_draft_vocabulary(*target_, target_file_->path(), m, other->path());
        FAIL() << "a draft of 600 tokens drafted for a target of 512";
    } catch (const ArgumentError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(other->path()), std::string::npos) << what;
        EXPECT_NE(what.find(target_file_->path()), std::string::npos) << what;
        EXPECT_NE(what.find("600 tokens"), std::string::npos) << what;
        EXPECT_NE(what.find("512 tokens"), std::string::npos) << what;
    }
    EXPECT_NO_THROW(check_draft_vocabulary(*target_, "t", *draft_, "d"));
}

}  // namespace
}  // namespace strata
