// Speculative decoding (engine/runtime/speculate.h): the prompt-lookup proposer on hand-made
// histories, Session::feed_all and its rollback against token-by-token feeding, and greedy
// generation with lookup speculation against generation without it on a synthetic model —
// token for token, over prompts that repeat (drafts get accepted) and prompts that do not,
// for several --draft-max values and batch sizes; sampled generation with lookup drafts.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "engine/runtime/speculate.h"
#include "engine/sampler/grammar.h"
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

TEST(PromptLookup, ProposesWhatFollowedTheLongestMatchingNgram) {
    // "5 6 7" ends the history and occurred at 0: what followed it there is the draft.
    const std::vector<int32_t> h = {5, 6, 7, 8, 9, 1, 2, 5, 6, 7};
    EXPECT_EQ(propose_lookup(h, 3), (std::vector<int32_t>{8, 9, 1}));
    EXPECT_EQ(propose_lookup(h, 1), (std::vector<int32_t>{8}));
    // The draft stops at the end of the history.
    EXPECT_EQ(propose_lookup(h, 64), (std::vector<int32_t>{8, 9, 1, 2, 5, 6, 7}));
}

TEST(PromptLookup, PrefersTheMostRecentMatchAndFallsBackToShorterNgrams) {
    // "4 1 2" never occurred before; "1 2" did, at 0 and at 3: the later one wins.
    const std::vector<int32_t> h = {1, 2, 3, 1, 2, 4, 1, 2};
    EXPECT_EQ(propose_lookup(h, 2), (std::vector<int32_t>{4, 1}));
    // Only the last token matches (at 1): a unigram draft.
    const std::vector<int32_t> u = {9, 8, 3, 4, 5, 6, 8};
    EXPECT_EQ(propose_lookup(u, 2), (std::vector<int32_t>{3, 4}));
    // A longer match outranks a more recent shorter one.
    const std::vector<int32_t> l = {7, 8, 9, 1, 8, 9, 2, 7, 8, 9};
    EXPECT_EQ(propose_lookup(l, 1), (std::vector<int32_t>{1}));
}

TEST(PromptLookup, ProposesNothingWithoutAMatch) {
    EXPECT_TRUE(propose_lookup(std::vector<int32_t>{1, 2, 3, 4}, 8).empty());
    EXPECT_TRUE(propose_lookup(std::vector<int32_t>{1}, 8).empty());
    EXPECT_TRUE(propose_lookup(std::vector<int32_t>{}, 8).empty());
    EXPECT_TRUE(propose_lookup(std::vector<int32_t>{1, 1, 1}, 0).empty());
}

TEST(SpecParams, RefusesDraftSizesOutsideTheirRangesNamingTheFlag) {
    SpecParams p;
    p.mode = SpecMode::Lookup;
    p.draft_max = 0;
    EXPECT_THROW({
        try { p.validate(256); } catch (const ArgumentError& e) {
            EXPECT_NE(std::string(e.what()).find("--draft-max must be in 1..64"), std::string::npos) << e.what();
            throw;
        }
    }, ArgumentError);
    p.draft_max = 8;
    EXPECT_NO_THROW(p.validate(9));
    EXPECT_THROW(p.validate(8), ArgumentError);  // 1 + 8 tokens do not fit a batch of 8
    p.draft_min = 9;
    EXPECT_THROW(p.validate(256), ArgumentError);
    EXPECT_THROW(parse_spec_mode("tree"), ArgumentError);
    EXPECT_EQ(parse_spec_mode("self"), SpecMode::Self);
    EXPECT_EQ(parse_spec_mode("draft"), SpecMode::Draft);
    EXPECT_EQ(parse_spec_mode("lookup"), SpecMode::Lookup);
}

class SpeculateTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        file_ = std::make_unique<testing::ScratchFile>("speculate_test_tiny.gguf");
        SynthOptions o;
        o.preset = "tiny";
        write_synth_model(o, file_->path());
        model_ = std::make_unique<Model>(file_->path());
    }
    static void TearDownTestSuite() {
        model_.reset();
        file_.reset();
    }
    int32_t n_vocab() const { return static_cast<int32_t>(model_->config().n_vocab); }

    struct Output {
        std::vector<int32_t> tokens;  // the session's tokens after generation
        std::string text;
        GenerateStats stats;
    };
    Output generate_with(const std::vector<int32_t>& prompt, const GenerateParams& gp, int64_t n_batch) {
        SessionParams sp;
        sp.n_ctx = 256;
        sp.n_batch = n_batch;
        Session session(*model_, cpu_, sp);
        Output out;
        out.stats = generate(session, prompt, gp, [&](std::string_view t) {
            out.text += t;
            return true;
        });
        out.tokens = session.tokens();
        return out;
    }

    static inline std::unique_ptr<testing::ScratchFile> file_;
    static inline std::unique_ptr<Model> model_;
    cpu::CpuBackend cpu_{2};
};

TEST_F(SpeculateTest, FeedAllGivesEveryRowsLogitsAndRollsBackAcrossBatches) {
    const std::vector<int32_t> a = random_tokens(11, n_vocab(), 3);
    const std::vector<int32_t> b = random_tokens(6, n_vocab(), 4);
    SessionParams sp;
    sp.n_ctx = 64;
    sp.n_batch = 4;  // the 11 tokens span three batches
    Session one(*model_, cpu_, sp), all(*model_, cpu_, sp);
    const std::span<const float> rows = all.feed_all(a);
    const size_t nv = static_cast<size_t>(n_vocab());
    ASSERT_EQ(rows.size(), a.size() * nv);
    const std::vector<float> kept(rows.begin(), rows.end());
    for (size_t i = 0; i < a.size(); ++i) {
        const std::span<const float> l = one.feed({&a[i], 1});
        ASSERT_EQ(std::vector<float>(l.begin(), l.end()),
                  std::vector<float>(kept.begin() + static_cast<std::ptrdiff_t>(i * nv),
                                     kept.begin() + static_cast<std::ptrdiff_t>((i + 1) * nv)))
            << "row " << i;
    }
    // Roll back to 3 tokens (into the first batch) and feed others: as if never fed.
    all.truncate(3);
    const std::span<const float> after = all.feed_all(b);
    const std::vector<float> got(after.end() - static_cast<std::ptrdiff_t>(nv), after.end());
    Session fresh(*model_, cpu_, sp);
    fresh.prefill(std::span<const int32_t>(a).first(3));
    const std::span<const float> want = fresh.feed(b);
    EXPECT_EQ(got, std::vector<float>(want.begin(), want.end()));
    EXPECT_EQ(all.tokens().size(), 9u);
}

TEST_F(SpeculateTest, GreedyOutputWithLookupEqualsOutputWithout) {
    const std::vector<int32_t> phrase = random_tokens(12, n_vocab(), 7);
    std::vector<int32_t> repeating;
    for (int r = 0; r < 3; ++r) repeating.insert(repeating.end(), phrase.begin(), phrase.end());
    repeating.insert(repeating.end(), phrase.begin(), phrase.begin() + 4);
    const std::vector<int32_t> plain = random_tokens(30, n_vocab(), 8);
    int64_t accepted = 0, rejected = 0;
    const std::vector<int32_t>* const prompts[] = {&repeating, &plain};
    for (const std::vector<int32_t>* prompt : prompts) {
        for (float penalty : {1.0f, 1.3f}) {
            GenerateParams gp;
            gp.n_predict = 40;
            gp.stop_at_eog = false;
            gp.sampler.temperature = 0.0f;
            gp.sampler.repeat_penalty = penalty;
            const Output base = generate_with(*prompt, gp, 16);
            ASSERT_EQ(base.stats.n_generated, 40);
            // (draft_max, batch): drafts of 1 up to the most a batch of 16 verifies.
            for (auto [draft_max, n_batch] : {std::pair<int64_t, int64_t>{1, 16}, {3, 64}, {8, 16}, {15, 16}}) {
                gp.spec.mode = SpecMode::Lookup;
                gp.spec.draft_max = draft_max;
                const Output spec = generate_with(*prompt, gp, n_batch);
                SCOPED_TRACE(::testing::Message() << "draft_max " << draft_max << " batch " << n_batch
                                                  << " penalty " << penalty);
                EXPECT_EQ(spec.tokens, base.tokens);
                EXPECT_EQ(spec.text, base.text);
                EXPECT_EQ(spec.stats.n_generated, base.stats.n_generated);
                EXPECT_LE(spec.stats.spec.accepted, spec.stats.spec.proposed);
                accepted += spec.stats.spec.accepted;
                rejected += spec.stats.spec.proposed - spec.stats.spec.accepted;
            }
        }
    }
    // Both kinds of pass happened: kept drafts, and rejected ones whose KV was rolled back.
    EXPECT_GT(accepted, 0) << "no draft was ever accepted: the equality above tested nothing";
    EXPECT_GT(rejected, 0) << "no draft was ever rejected: the rollback went untested";
}

TEST_F(SpeculateTest, StopsAtTheContextEndLikePlainDecoding) {
    const std::vector<int32_t> phrase = random_tokens(10, n_vocab(), 9);
    std::vector<int32_t> prompt;
    for (int r = 0; r < 4; ++r) prompt.insert(prompt.end(), phrase.begin(), phrase.end());
    GenerateParams gp;
    gp.n_predict = -1;
    gp.stop_at_eog = false;
    gp.sampler.temperature = 0.0f;
    SessionParams sp;
    sp.n_ctx = 64;
    sp.n_batch = 16;
    auto run = [&](SpecMode mode) {
        gp.spec.mode = mode;
        Session s(*model_, cpu_, sp);
        const GenerateStats st = generate(s, prompt, gp, [](std::string_view) { return true; });
        EXPECT_EQ(st.stop, StopReason::ContextFull);
        return std::make_pair(s.tokens(), st.n_generated);
    };
    EXPECT_EQ(run(SpecMode::Lookup), run(SpecMode::Off));
}

TEST_F(SpeculateTest, RefusesAGrammarWhenSamplingAndADraftModeWithoutADraft) {
    SessionParams sp;
    sp.n_ctx = 32;
    Session s(*model_, cpu_, sp);
    SamplerParams p;
    p.temperature = 0.7f;
    p.grammar = std::make_shared<const Grammar>(parse_gbnf("root ::= [a-z]+"));
    Sampler sampler(p, n_vocab());
    const std::vector<float> logits(static_cast<size_t>(n_vocab()), 0.0f);
    SpecParams spec;
    spec.mode = SpecMode::Lookup;
    EXPECT_THROW(SpeculativeDecoder(s, sampler, spec, logits), ArgumentError);
    p.grammar.reset();
    Sampler plain(p, n_vocab());
    EXPECT_NO_THROW(SpeculativeDecoder(s, plain, spec, logits));  // rejection sampling keeps it exact
    spec.mode = SpecMode::Draft;
    EXPECT_THROW(SpeculativeDecoder(s, plain, spec, logits), ArgumentError);
}

TEST_F(SpeculateTest, SampledOutputWithLookupIsAValidSampleAndUsesDrafts) {
    // A prompt that repeats: lookup drafts, the rejection test keeps some and resamples others.
    // (The distribution itself is tested in spec_sampling_test.cpp and draft_model_test.cpp.)
    const std::vector<int32_t> phrase = random_tokens(8, n_vocab(), 17);
    std::vector<int32_t> prompt;
    for (int r = 0; r < 4; ++r) prompt.insert(prompt.end(), phrase.begin(), phrase.end());
    GenerateParams gp;
    gp.n_predict = 32;
    gp.stop_at_eog = false;
    gp.sampler.temperature = 0.3f;
    gp.sampler.seed = 5;
    gp.spec.mode = SpecMode::Lookup;
    const Output out = generate_with(prompt, gp, 16);
    EXPECT_EQ(out.stats.n_generated, 32);
    EXPECT_EQ(out.tokens.size(), prompt.size() + 31);  // the last token is never fed
    EXPECT_GT(out.stats.spec.proposed, 0);
}

}  // namespace
}  // namespace strata
