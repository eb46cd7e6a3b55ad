// Token log-probabilities: token_logprob against log-softmax computed here in long double, the
// alternatives in order with ties broken by id, and the chat and completion JSON shapes (OpenAI's
// field names; text_offset running over the pieces); then through the scheduler, one entry per
// generated token, the greedy choice being the most likely alternative.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/session.h"
#include "engine/server/logprobs.h"
#include "engine/server/scheduler.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/chat/tiny_model.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata::server {
namespace {

using namespace std::chrono_literals;

class LogprobsTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch_ = new testing::ScratchFile("logprobs_tiny_gemma3.gguf");
        testing::write_tiny_gemma3(scratch_->path());
        model_ = new Model(scratch_->path());
    }
    static void TearDownTestSuite() {
        delete model_;
        delete scratch_;
    }
    static inline testing::ScratchFile* scratch_ = nullptr;
    static inline Model* model_ = nullptr;
};

TEST_F(LogprobsTest, LogSoftmaxAndTopAlternatives) {
    const Tokenizer& tok = model_->tokenizer();
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 4.0f);
    std::vector<float> logits(300);
    for (float& l : logits) l = dist(rng);
    logits[17] = logits[42] = 30.0f;  // a tie at the top: the lower id first
    logits[5] = -INFINITY;            // a banned token
    long double z = 0;
    for (float l : logits) z += std::exp(static_cast<long double>(l));
    for (TokenId chosen : {17, 42, 5, 250}) {
        const TokenLogprob lp = token_logprob(logits, chosen, 3, tok);
        const long double want = static_cast<long double>(logits[static_cast<size_t>(chosen)]) - std::log(z);
        if (std::isinf(static_cast<double>(want))) {
            EXPECT_TRUE(std::isinf(lp.logprob) && lp.logprob < 0);
        } else {
            EXPECT_NEAR(lp.logprob, static_cast<double>(want), 1e-4);
        }
        EXPECT_EQ(lp.piece, tok.token_to_piece(chosen));
        ASSERT_EQ(lp.top.size(), 3u);
        EXPECT_EQ(lp.top[0].first, tok.token_to_piece(17));
        EXPECT_EQ(lp.top[1].first, tok.token_to_piece(42));
        EXPECT_NEAR(lp.top[0].second, static_cast<double>(30.0L - std::log(z)), 1e-4);
        EXPECT_GE(lp.top[1].second, lp.top[2].second);
    }
    EXPECT_TRUE(token_logprob(logits, 3, 0, tok).top.empty());
    EXPECT_EQ(token_logprob(logits, 3, 99, tok).top.size(), static_cast<size_t>(kMaxTopLogprobs));
    EXPECT_THROW(token_logprob(logits, 300, 0, tok), ArgumentError);
}

TEST_F(LogprobsTest, ChatAndCompletionShapes) {
    const std::vector<TokenLogprob> tokens = {{1, "He", -0.5f, {{"He", -0.5f}, {"Hi", -1.5f}}},
                                              {2, "llo", -0.25f, {{"llo", -0.25f}, {"y", -2.0f}}}};
    const nlohmann::json chat = chat_logprobs_json(tokens);
    ASSERT_EQ(chat["content"].size(), 2u);
    EXPECT_EQ(chat["content"][1]["token"], "llo");
    EXPECT_FLOAT_EQ(chat["content"][1]["logprob"].get<float>(), -0.25f);
    EXPECT_EQ(chat["content"][0]["bytes"], nlohmann::json::array({72, 101}));
    EXPECT_EQ(chat["content"][0]["top_logprobs"][1]["token"], "Hi");
    const nlohmann::json comp = completion_logprobs_json(tokens, 10);
    EXPECT_EQ(comp["tokens"], nlohmann::json::array({"He", "llo"}));
    EXPECT_EQ(comp["text_offset"], nlohmann::json::array({10, 12}));
    EXPECT_FLOAT_EQ(comp["top_logprobs"][1]["y"].get<float>(), -2.0f);
    EXPECT_FLOAT_EQ(comp["token_logprobs"][0].get<float>(), -0.5f);
}

TEST_F(LogprobsTest, SchedulerReportsOnePerGeneratedToken) {
    cpu::CpuBackend backend(1);
    const PlacedModel placed(*model_, backend);
    std::vector<std::unique_ptr<Session>> sessions;
    SessionParams p;
    p.n_ctx = 128;
    for (int i = 0; i < 2; ++i) sessions.push_back(std::make_unique<Session>(placed, p));
    Scheduler scheduler(std::move(sessions), SchedulerOptions{});
    std::vector<std::shared_ptr<Job>> jobs;
    for (int i = 0; i < 2; ++i) {
        JobSpec spec;
        spec.prompt = model_->tokenizer().encode(i == 0 ? "Hello there" : "Something else entirely", true);
        spec.max_tokens = 6;
        spec.sampler.temperature = 0;
        spec.ignore_eos = true;
        spec.logprobs = 2;
        jobs.push_back(std::make_shared<Job>(spec));
        scheduler.submit(jobs.back());
    }
    for (auto& job : jobs) {
        std::vector<TokenLogprob> got;
        Job::Update u;
        for (int i = 0; i < 1000 && !u.finished; ++i) {
            u = job->take(100ms);
            got.insert(got.end(), u.logprobs.begin(), u.logprobs.end());
        }
        ASSERT_TRUE(u.finished);
        ASSERT_EQ(static_cast<int64_t>(got.size()), u.result.n_generated);
        for (const TokenLogprob& t : got) {
            ASSERT_EQ(t.top.size(), 2u);
            EXPECT_EQ(t.logprob, t.top[0].second);  // greedy picks the most likely token
            EXPECT_LE(t.logprob, 0.0f);
        }
    }
}

}  // namespace
}  // namespace strata::server
