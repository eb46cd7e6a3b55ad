// The scheduler on a tiny synthetic Gemma 3, against the single-sequence generate() path as the
// oracle: greedy answers alone and concurrent (several slots, chunked prefill, more jobs than
// slots, decode steps batched across slots or not) equal generate() on a fresh session; prefix reuse keeps the shared KV; stop strings,
// max_tokens, cancellation, a full queue (429) and shutdown (503).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/session.h"
#include "engine/server/api_error.h"
#include "engine/server/scheduler.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/chat/tiny_model.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata::server {
namespace {

using namespace std::chrono_literals;

struct Answer {
    std::string text;
    JobResult result;
};

class SchedulerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch_ = new testing::ScratchFile("server_tiny_gemma3.gguf");
        testing::write_tiny_gemma3(scratch_->path());
        model_ = new Model(scratch_->path());
    }
    static void TearDownTestSuite() {
        delete model_;
        delete scratch_;
    }

    static constexpr int64_t kCtx = 256;

    // Sessions on one shared placement (as Runtime::new_session makes them), so the scheduler
    // batches their decode steps.
    std::vector<std::unique_ptr<Session>> sessions(int n) {
        if (!placed_) placed_ = std::make_unique<PlacedModel>(*model_, backend_);
        std::vector<std::unique_ptr<Session>> out;
        SessionParams p;
        p.n_ctx = kCtx;
        for (int i = 0; i < n; ++i) out.push_back(std::make_unique<Session>(*placed_, p));
        return out;
    }

    static std::vector<TokenId> prompt(const std::string& text) { return model_->tokenizer().encode(text, true); }

    static JobSpec greedy(std::vector<TokenId> tokens, int64_t max_tokens, std::vector<std::string> stop = {}) {
        JobSpec spec;
        spec.prompt = std::move(tokens);
        spec.max_tokens = max_tokens;
        spec.sampler.temperature = 0;
        spec.stop = std::move(stop);
        return spec;
    }

    // The oracle: generate() on a fresh session with the same greedy sampler.
    Answer oracle(const JobSpec& spec) {
        SessionParams p;
        p.n_ctx = kCtx;
        Session session(*model_, backend_, p);
        GenerateParams g;
        g.n_predict = spec.max_tokens;
        g.sampler = spec.sampler;
        Answer a;
        const GenerateStats stats = generate(session, spec.prompt, g, [&](std::string_view piece) {
            a.text += piece;
            return true;
        });
        a.result.n_generated = stats.n_generated;
        a.result.finish = stats.stop == StopReason::EndOfGeneration ? FinishReason::Stop : FinishReason::Length;
        return a;
    }

    // Collects a job's text until it finishes (bounded wait).
    static Answer collect(Job& job) {
        Answer a;
        const auto deadline = std::chrono::steady_clock::now() + 120s;
        while (std::chrono::steady_clock::now() < deadline) {
            Job::Update u = job.take(100ms);
            a.text += u.text;
            if (u.finished) {
                a.result = u.result;
                return a;
            }
        }
        ADD_FAILURE() << "the job did not finish";
        return a;
    }

    static inline testing::ScratchFile* scratch_ = nullptr;
    static inline Model* model_ = nullptr;
    cpu::CpuBackend backend_{1};
    std::unique_ptr<PlacedModel> placed_;
};

TEST_F(SchedulerTest, AloneEqualsGenerate) {
    Scheduler scheduler(sessions(1), SchedulerOptions{});
    for (const char* text : {"Hello there, how are you", "Once upon a time"}) {
        const JobSpec spec = greedy(prompt(text), 12);
        const Answer want = oracle(spec);
        auto job = std::make_shared<Job>(spec);
        scheduler.submit(job);
        const Answer got = collect(*job);
        EXPECT_EQ(got.result.status, 200) << got.result.error;
        EXPECT_EQ(got.text, want.text) << text;
        EXPECT_EQ(got.result.n_generated, want.result.n_generated);
        EXPECT_EQ(got.result.finish, want.result.finish);
        EXPECT_EQ(got.result.n_prompt, static_cast<int64_t>(spec.prompt.size()));
    }
}

TEST_F(SchedulerTest, ConcurrentWithChunkedPrefillEqualsAlone) {
    for (const int mode : {0, 1, 2}) {
        const bool batch = mode != 2, fuse = mode == 0;
        SCOPED_TRACE(fuse ? "prompt chunks in the batched pass" : batch ? "decode steps batched" : "one pass per slot");
        SchedulerOptions options;
        options.chunk_tokens = 5;  // every prompt here takes several steps to prefill
        options.batch_decode = batch;
        options.fuse_prompts = fuse;
        Scheduler scheduler(sessions(3), options);
        std::string long_text;
        for (int i = 0; i < 12; ++i) long_text += "the quick brown fox jumps ";
        const std::vector<std::string> texts = {"Hello there, how are you today", long_text, "One two three four five six",
                                                "A rather different prompt with words", "Once upon a time in a land"};
        std::vector<JobSpec> specs;
        std::vector<std::shared_ptr<Job>> jobs;
        for (size_t i = 0; i < texts.size(); ++i) {
            specs.push_back(greedy(prompt(texts[i]), 8 + static_cast<int64_t>(i) * 3));
            ASSERT_GT(specs.back().prompt.size(), 5u);
            jobs.push_back(std::make_shared<Job>(specs.back()));
            scheduler.submit(jobs.back());  // five jobs, three slots: two wait, then join mid-flight
        }
        int64_t n_generated = 0;
        for (size_t i = 0; i < jobs.size(); ++i) {
            const Answer got = collect(*jobs[i]);
            const Answer want = oracle(specs[i]);
            n_generated += want.result.n_generated;
            EXPECT_EQ(got.result.status, 200) << got.result.error;
            EXPECT_EQ(got.text, want.text) << "job " << i;
            EXPECT_EQ(got.result.n_generated, want.result.n_generated) << "job " << i;
        }
        EXPECT_GT(n_generated, 30) << "the answers are too short to compare";
        // Batched: slots decoded together (three slots, answers of 8 to 20 tokens).
        const SchedulerGauges g = scheduler.gauges();
        // On this host placement prompt chunks ride in those passes too (Dynamic SplitFuse).
        if (batch) {
            EXPECT_GT(g.batched_passes, 3);
            EXPECT_GE(g.batched_rows + g.batched_prompt_rows, 2 * g.batched_passes);
            EXPECT_EQ(g.batched_prompt_rows > 0, fuse);
        } else {
            EXPECT_EQ(g.batched_passes, 0);
            EXPECT_EQ(g.batched_prompt_rows, 0);
        }
    }
}

TEST_F(SchedulerTest, NextTurnReusesTheSlotsKv) {
    Scheduler scheduler(sessions(2), SchedulerOptions{});
    const JobSpec first = greedy(prompt("The first turn of a conversation"), 6);
    auto a = std::make_shared<Job>(first);
    scheduler.submit(a);
    const Answer got_a = collect(*a);
    ASSERT_EQ(got_a.result.status, 200);
    // The next request extends the first prompt: the slot that holds it keeps those cells.
    std::vector<TokenId> extended = first.prompt;
    for (TokenId t : prompt("and then some more words")) {
        if (t != model_->tokenizer().bos()) extended.push_back(t);
    }
    const JobSpec second = greedy(extended, 6);
    auto b = std::make_shared<Job>(second);
    scheduler.submit(b);
    const Answer got_b = collect(*b);
    ASSERT_EQ(got_b.result.status, 200);
    EXPECT_EQ(got_b.result.n_reused, static_cast<int64_t>(first.prompt.size()));
    EXPECT_EQ(got_b.text, oracle(second).text);
    // An unrelated prompt reuses only the BOS it shares.
    auto c = std::make_shared<Job>(greedy(prompt("Something else entirely"), 4));
    scheduler.submit(c);
    EXPECT_LE(collect(*c).result.n_reused, 1);
    // cache_prompt false (llama-server's field): the same extended prompt is evaluated whole,
    // and gives the same text.
    JobSpec again = second;
    again.cache_prompt = false;
    auto d = std::make_shared<Job>(again);
    scheduler.submit(d);
    const Answer got_d = collect(*d);
    ASSERT_EQ(got_d.result.status, 200);
    EXPECT_EQ(got_d.result.n_reused, 0);
    EXPECT_EQ(got_d.text, got_b.text);
}

TEST_F(SchedulerTest, StopStringsCutTheAnswer) {
    const JobSpec plain = greedy(prompt("Tell me a story about"), 24);
    const Answer full = oracle(plain);
    ASSERT_GE(full.text.size(), 6u) << "the tiny model's answer is too short to cut: '" << full.text << "'";
    const std::string stop = full.text.substr(full.text.size() / 2, 2);
    Scheduler scheduler(sessions(1), SchedulerOptions{});
    auto job = std::make_shared<Job>(greedy(plain.prompt, 24, {stop, "\x01never"}));
    scheduler.submit(job);
    const Answer got = collect(*job);
    EXPECT_EQ(got.text, full.text.substr(0, full.text.find(stop)));
    EXPECT_EQ(got.result.finish, FinishReason::Stop);
    EXPECT_LT(got.result.n_generated, 24);
}

TEST_F(SchedulerTest, MaxTokensEndsWithLength) {
    Scheduler scheduler(sessions(1), SchedulerOptions{});
    JobSpec spec = greedy(prompt("Count with me"), 3);
    spec.sampler.logit_bias = {};
    // Ban the end-of-generation tokens so that only max_tokens can end it.
    for (TokenId t : model_->tokenizer().eog_ids()) spec.sampler.logit_bias[t] = -INFINITY;
    auto job = std::make_shared<Job>(spec);
    scheduler.submit(job);
    const Answer got = collect(*job);
    EXPECT_EQ(got.result.finish, FinishReason::Length);
    EXPECT_EQ(got.result.n_generated, 3);
}

TEST_F(SchedulerTest, CancelledJobFreesItsSlot) {
    Scheduler scheduler(sessions(1), SchedulerOptions{});
    JobSpec endless = greedy(prompt("Go on and on"), kCtx - 8);
    for (TokenId t : model_->tokenizer().eog_ids()) endless.sampler.logit_bias[t] = -INFINITY;
    auto job = std::make_shared<Job>(endless);
    scheduler.submit(job);
    while (job->take(50ms).text.empty() && !job->finished()) {
    }
    job->cancel();
    const Answer cancelled = collect(*job);
    EXPECT_EQ(cancelled.result.status, 499);
    EXPECT_LT(cancelled.result.n_generated, kCtx - 8);
    // The slot is free again: the next job runs to its end.
    auto next = std::make_shared<Job>(greedy(prompt("Next"), 4));
    scheduler.submit(next);
    EXPECT_EQ(collect(*next).result.status, 200);
}

TEST_F(SchedulerTest, RequestTimeoutEndsRunningAndQueuedJobsWith504) {
    SchedulerOptions options;
    options.request_timeout_s = 0.02;  // far less than 248 decode steps take
    Scheduler scheduler(sessions(1), options);
    JobSpec endless = greedy(prompt("Keep talking"), kCtx - 8);
    endless.ignore_eos = true;  // only the timeout (or the context) can end it
    auto running = std::make_shared<Job>(endless);
    auto queued = std::make_shared<Job>(endless);
    scheduler.submit(running);
    scheduler.submit(queued);  // one slot: waits, then starts past its own deadline
    const Answer a = collect(*running);
    EXPECT_EQ(a.result.status, 504);
    EXPECT_NE(a.result.error.find("--request-timeout"), std::string::npos) << a.result.error;
    EXPECT_LT(a.result.n_generated, kCtx - 8);
    EXPECT_EQ(collect(*queued).result.status, 504);
}

TEST_F(SchedulerTest, IgnoreEosRunsToMaxTokensAndCancelLeavesTheBatch) {
    Scheduler scheduler(sessions(3), SchedulerOptions{});
    JobSpec spec = greedy(prompt("Tell me a story"), 40);
    spec.ignore_eos = true;
    std::vector<std::shared_ptr<Job>> jobs;
    for (int i = 0; i < 3; ++i) {
        jobs.push_back(std::make_shared<Job>(spec));
        scheduler.submit(jobs.back());
    }
    while (jobs[1]->take(20ms).text.empty() && !jobs[1]->finished()) {
    }
    jobs[1]->cancel();  // leaves the running batch at the next step
    const Answer first = collect(*jobs[0]);
    EXPECT_EQ(first.result.status, 200);
    EXPECT_EQ(first.result.n_generated, 40);
    EXPECT_EQ(first.result.finish, FinishReason::Length);
    EXPECT_EQ(collect(*jobs[1]).result.status, 499);
    const Answer third = collect(*jobs[2]);
    EXPECT_EQ(third.text, first.text);  // the same prompt, greedy, batched with different partners
    EXPECT_GT(scheduler.gauges().batched_passes, 0);
}

// A job whose sampler throws inside a batched pass (every token banned) fails alone with 500;
// the jobs beside it in the same passes keep generate()'s answer, and the engine's time
// counters of those passes move.
TEST_F(SchedulerTest, SamplingFailureInABatchedPassFailsOnlyItsJob) {
    Scheduler scheduler(sessions(3), SchedulerOptions{});
    JobSpec good = greedy(prompt("Tell me a story"), 24);
    good.ignore_eos = true;
    JobSpec banned = greedy(prompt("Once upon a time"), 24);
    const auto n_vocab = static_cast<int32_t>(model_->weights().output.ne[1]);
    for (int32_t t = 0; t < n_vocab; ++t) banned.sampler.logit_bias[t] = -INFINITY;
    auto ok = std::make_shared<Job>(good), bad = std::make_shared<Job>(banned), ok2 = std::make_shared<Job>(good);
    scheduler.submit(ok);
    scheduler.submit(bad);
    scheduler.submit(ok2);
    const Answer failed = collect(*bad);
    EXPECT_EQ(failed.result.status, 500);
    EXPECT_NE(failed.result.error.find("-inf"), std::string::npos) << failed.result.error;
    const Answer want = oracle(good);
    for (Job* job : {ok.get(), ok2.get()}) {
        const Answer got = collect(*job);
        EXPECT_EQ(got.result.status, 200) << got.result.error;
        EXPECT_EQ(got.text, want.text);
        EXPECT_EQ(got.result.n_generated, 24);
    }
    const SchedulerGauges g = scheduler.gauges();
    EXPECT_GT(g.batched_passes, 0);
    EXPECT_GT(g.batched_pass_seconds, 0.0);
    EXPECT_GT(g.batched_token_seconds, 0.0);
}

TEST_F(SchedulerTest, FullQueueIs429AndShutdownIs503) {
    SchedulerOptions options;
    options.max_queue = 1;
    Scheduler scheduler(sessions(1), options);
    JobSpec endless = greedy(prompt("Keep going"), kCtx - 8);
    for (TokenId t : model_->tokenizer().eog_ids()) endless.sampler.logit_bias[t] = -INFINITY;
    std::vector<std::shared_ptr<Job>> accepted;
    int n_refused = 0;
    for (int i = 0; i < 4; ++i) {
        auto job = std::make_shared<Job>(endless);
        try {
            scheduler.submit(job);
            accepted.push_back(job);
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status(), 429);
            ++n_refused;
        }
    }
    // One runs (or waits to), one waits: the other two are refused.
    EXPECT_GE(n_refused, 2);
    EXPECT_GE(accepted.size(), 1u);
    scheduler.shutdown("test shutdown");
    for (auto& job : accepted) {
        ASSERT_TRUE(job->finished());
        const Answer a = collect(*job);
        EXPECT_EQ(a.result.status, 503);
        EXPECT_EQ(a.result.error, "test shutdown");
    }
    try {
        scheduler.submit(std::make_shared<Job>(endless));
        ADD_FAILURE() << "submit after shutdown was accepted";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 503);
    }
}

TEST_F(SchedulerTest, LookupSpeculationKeepsGreedyOutput) {
    SchedulerOptions options;
    options.spec.mode = SpecMode::Lookup;
    options.spec.draft_max = 6;
    options.chunk_tokens = 16;
    Scheduler scheduler(sessions(2), options);
    std::string repeat;
    for (int i = 0; i < 6; ++i) repeat += "the quick brown fox jumps over the lazy dog ";
    // Alone: speculation runs (the prompt repeats itself, so lookup finds drafts).
    for (const std::string& text : {repeat, std::string("Hello there, how are you")}) {
        const JobSpec spec = greedy(prompt(text), 24);
        auto job = std::make_shared<Job>(spec);
        scheduler.submit(job);
        const Answer got = collect(*job);
        const Answer want = oracle(spec);
        EXPECT_EQ(got.result.status, 200) << got.result.error;
        EXPECT_EQ(got.text, want.text) << text;
        EXPECT_EQ(got.result.n_generated, want.result.n_generated);
    }
    const SchedulerGauges g = scheduler.gauges();
    EXPECT_GT(g.spec_passes, 0);
    EXPECT_LE(g.spec_accepted, g.spec_proposed);
    // Two at once: batched without speculation, the same text.
    const JobSpec a = greedy(prompt(repeat), 16), b = greedy(prompt("Once upon a time in a land"), 16);
    auto ja = std::make_shared<Job>(a), jb = std::make_shared<Job>(b);
    scheduler.submit(ja);
    scheduler.submit(jb);
    EXPECT_EQ(collect(*ja).text, oracle(a).text);
    EXPECT_EQ(collect(*jb).text, oracle(b).text);
}

}  // namespace
}  // namespace strata::server
