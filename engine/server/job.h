// Job: one generation request in flight, shared by the HTTP handler that waits for its text
// and the scheduler's engine thread that produces it. The handler takes the text made since
// its last look (take), or cancels (the client left); the engine appends text and finishes it
// once, with a result. Thread-safe: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/sampler/sampler_params.h"
#include "engine/server/logprobs.h"
#include "engine/tokenizer/vocab.h"

namespace strata::server {

// What the engine needs to run a request; checked against the context before it is queued.
struct JobSpec {
    std::vector<TokenId> prompt;     // never empty; prompt.size() + max_tokens <= the slot's context
    int64_t max_tokens = 1;          // >= 1
    SamplerParams sampler;           // validated, logit_bias ids inside the vocabulary
    std::vector<std::string> stop;   // non-empty strings
    bool ignore_eos = false;         // generate past end-of-generation tokens (benchmarks)
    bool cache_prompt = true;        // false: no slot's cached prefix is reused
    int logprobs = -1;               // -1: none; else the chosen token's and this many alternatives
};

// ToolCalls: the answer was read as tool calls (set by the response, never by the engine).
enum class FinishReason { Stop, Length, ToolCalls };
const char* finish_reason_name(FinishReason reason);  // "stop", "length", "tool_calls"

struct JobResult {
    FinishReason finish = FinishReason::Stop;
    int64_t n_prompt = 0;     // prompt tokens, reused ones included
    int64_t n_reused = 0;     // prompt tokens whose KV the slot already held
    int64_t n_generated = 0;  // tokens sampled (an end-of-generation token is not counted)
    int status = 200;         // != 200: the job failed (500 engine error, 503 shutting down)
    std::string error;        // the failure, when status != 200
};

class Job {
public:
    explicit Job(JobSpec spec);

    const JobSpec& spec() const { return spec_; }

    // --- the handler's side
    struct Update {
        std::string text;      // made since the previous take()
        std::vector<TokenLogprob> logprobs;  // of the tokens sampled since (spec.logprobs >= 0)
        bool finished = false;
        JobResult result;      // valid when finished
    };
    // Waits up to `timeout` for new text or the end; returns what there is (maybe nothing).
    Update take(std::chrono::milliseconds timeout);
    // The client is gone: the engine drops the job at its next step and finishes it.
    void cancel() { cancelled_.store(true); }

    // --- the engine's side
    bool cancelled() const { return cancelled_.load(); }
    void append(std::string_view text);
    void add_logprob(TokenLogprob logprob);
    // The first call wins; later ones are ignored.
    void finish(JobResult result);
    bool finished() const;

    // When it was queued, for the queue-wait metric.
    std::chrono::steady_clock::time_point queued_at() const { return queued_at_; }
    // Whether more than timeout_s seconds passed since it was queued (never when timeout_s <= 0).
    bool past_deadline(double timeout_s) const {
        return timeout_s > 0 &&
               std::chrono::duration<double>(std::chrono::steady_clock::now() - queued_at_).count() > timeout_s;
    }

private:
    const JobSpec spec_;
    const std::chrono::steady_clock::time_point queued_at_;
    std::atomic<bool> cancelled_{false};
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::string pending_;
    std::vector<TokenLogprob> pending_logprobs_;
    bool finished_ = false;
    JobResult result_;
};

}  // namespace strata::server
