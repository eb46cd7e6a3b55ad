// Slot: one Session of the scheduler and the job it serves. A job starts by keeping the part of
// the session's KV cache that its prompt shares (prefix reuse across the turns of one
// conversation), then each step runs one forward pass: the next chunk of the prompt, or the
// last sampled token (alone, or with other slots' tokens in the scheduler's batch step). Sampling, streaming detokenization and stop strings happen here, so the
// handler receives finished text. Used only by the scheduler's engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "engine/runtime/session.h"
#include "engine/runtime/speculate.h"
#include "engine/sampler/sampler.h"
#include "engine/server/job.h"
#include "engine/server/stop_matcher.h"
#include "engine/tokenizer/detokenizer.h"

namespace strata::server {

struct StepStats {
    int64_t n_prefilled = 0;  // prompt tokens evaluated
    int64_t n_decoded = 0;    // single tokens evaluated (a speculative pass: the token and its draft)
    int64_t n_spec_passes = 0;    // speculative passes (prompt lookup) ...
    int64_t n_spec_proposed = 0;  // ... the draft tokens they checked ...
    int64_t n_spec_accepted = 0;  // ... and kept
};

class Slot {
public:
    // chunk_tokens: the most prompt tokens one step evaluates (>= 1). spec: SpecMode::Lookup lets
    // a greedy job decode speculatively while it is alone (prompt lookup, issue 25; the output
    // is the same as without); other modes are off. 1 + spec.draft_max <= chunk_tokens.
    Slot(std::unique_ptr<Session> session, int64_t chunk_tokens, SpecParams spec = {});

    bool busy() const { return job_ != nullptr; }
    // Prompt tokens whose KV this slot would keep for `prompt` (at most prompt.size() - 1, so
    // that the last one is evaluated and gives logits).
    int64_t reusable_prefix(std::span<const TokenId> prompt) const;

    // Takes a job (the slot must be free): keeps the reusable prefix, forgets the rest.
    void start(std::shared_ptr<Job> job);
    // One forward pass. Finishes the job when it ends (end of generation, a stop string,
    // max_tokens), was cancelled, or failed (status 500 with the error). `alone`: no other slot
    // is busy, so a decode step may check a draft in the same pass (speculation).
    StepStats step(bool alone = false);
    // Ends the current job, if any, with a failure (503 at shutdown).
    void abort(int status, const std::string& message);

    // Batched decoding (the scheduler's BatchStep evaluates next_token() of several slots in one
    // pass): whether the slot's prompt is evaluated and a sampled token waits; the job's end when
    // its client went away (499) or it ran past timeout_s seconds since it was queued (504;
    // 0 = no limit) — true: the slot is free now; the logits of the pass for this slot;
    // a failed pass (the session forgets its KV, the job ends with 500).
    bool decoding() const { return busy() && next_prompt_ >= job_->spec().prompt.size(); }
    bool drop_if_gone(double timeout_s);
    Session& session() { return *session_; }
    TokenId next_token() const { return next_token_; }
    void take_logits(std::span<const float> logits);
    void fail(const std::string& message);
    // Fused passes (BatchStep::step_rows: prompt chunks beside decode tokens): whether a prompt
    // chunk waits; that chunk (the step() would evaluate: at most chunk_tokens); and the pass's
    // result for this slot: prompt_rows of its chunk evaluated (0 for a decode token), and the
    // logits of its last row, sampled when they end the prompt or the slot was decoding.
    bool prefilling() const { return busy() && !decoding(); }
    std::span<const TokenId> next_chunk() const;
    void took_rows(int64_t prompt_rows, std::span<const float> logits);

    int64_t n_ctx() const { return session_->n_ctx(); }
    int64_t n_cells_used() const { return session_->kv_cache().n_used(); }
    // A counter value set when the slot last took a job: the scheduler prefers the least
    // recently used among equal prefixes, so other conversations' caches live longer.
    uint64_t last_used = 0;

private:
    void emit(std::span<const float> logits);  // samples, streams the text, maybe ends
    bool speculates() const;  // lookup speculation on and the job greedy
    // The waiting token and a prompt-lookup draft in one pass; rows sampled in order while they
    // agree with the draft; the KV of the rejected draft tokens dropped.
    StepStats decode_lookup();
    void end(FinishReason reason);  // flushes held text, finishes the job, frees the slot
    void release();

    std::unique_ptr<Session> session_;
    int64_t chunk_tokens_;
    SpecParams spec_;
    std::shared_ptr<Job> job_;
    std::unique_ptr<Sampler> sampler_;
    std::shared_ptr<const GrammarVocab> grammar_vocab_;  // built at the first constrained request
    std::unique_ptr<Detokenizer> detok_;
    std::unique_ptr<StopMatcher> stop_;
    size_t next_prompt_ = 0;  // index of the job's next prompt token to evaluate
    TokenId next_token_ = 0;  // sampled, evaluated at the next step
    JobResult result_;
};

}  // namespace strata::server
