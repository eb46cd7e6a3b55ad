// Speculative decoding (issue 25): a proposer guesses the next few tokens, the target checks
// them all in one forward pass (Session::feed_all), a prefix is kept, and the KV cache is rolled
// back past the first rejection (Session::truncate). Greedy (temperature <= 0): the longest
// prefix the target itself would have chosen is kept, so the output equals decoding without
// speculation. Sampled: rejection sampling (spec_sampling.h) keeps the target's distribution.
// Proposers: prompt lookup — the longest n-gram (n = 3 down to 1) ending the text so far that
// occurred before in the prompt or output; the tokens that followed its most recent earlier
// occurrence are the draft (no second model: strong where the output repeats its input) — and
// a draft model (draft_model.h) — and a self-draft: a second session of the target itself that
// runs only the FFN work placed on the GPU (its hot neurons with --hot-neurons, the FFNs of GPU
// layers otherwise; SessionParams::gpu_ffn_only), proposing through the draft model's proposer.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/runtime/draft_length.h"
#include "engine/runtime/draft_model.h"
#include "engine/sampler/sampler.h"
#include "engine/tokenizer/vocab.h"

namespace strata {

class DraftProposer;
class Sampler;
class Session;

enum class SpecMode { Off, Lookup, Draft, Self };
// "off", "lookup", "draft" or "self"; throws ArgumentError naming --spec and the choices otherwise.
SpecMode parse_spec_mode(std::string_view text);
std::string_view spec_mode_name(SpecMode mode);
// Whether the mode proposes from a draft session (a draft model's, or the self-draft's).
inline bool drafts_from_session(SpecMode mode) { return mode == SpecMode::Draft || mode == SpecMode::Self; }

struct SpecParams {
    static constexpr int64_t kMaxDraft = 64;
    SpecMode mode = SpecMode::Off;
    int64_t draft_max = 8;  // tokens proposed per pass, 1..kMaxDraft and < the batch size
    int64_t draft_min = 0;  // shorter proposals are not verified (a plain step instead)
    int max_ngram = 3;      // lookup: longest n-gram matched
    // --draft-max auto: each pass drafts the k in 1..draft_max that DraftLength (draft_length.h)
    // expects to be fastest, from the acceptance and pass times measured so far.
    bool auto_length = false;
    DraftLengthPrior prior;  // its starting point (the cost model's pass costs, when known)

    // Throws ArgumentError naming --draft-max / --draft-min and their ranges; the verifying
    // pass of 1 + draft_max tokens must fit a batch of n_batch.
    void validate(int64_t n_batch) const;
};

struct SpecStats {
    int64_t passes = 0;    // verifying forward passes
    int64_t proposed = 0;  // draft tokens checked
    int64_t accepted = 0;  // draft tokens kept
    double mean_accepted() const { return passes > 0 ? static_cast<double>(accepted) / passes : 0.0; }
};

// Prompt lookup: up to max_tokens tokens that followed the most recent earlier occurrence of
// the longest n-gram (n = max_ngram .. 1) that ends `history`; empty when none occurred.
std::vector<TokenId> propose_lookup(std::span<const TokenId> history, int64_t max_tokens, int max_ngram = 3);

// The token source of a generation loop with speculation. next() gives the next output
// token (already passed to sampler.accept); advance(t) makes t, the token next() just gave,
// part of the context, verifying a draft after it when the proposer has one. Tokens a pass
// accepted are in the session before next() hands them out (fed_ahead() counts them).
class SpeculativeDecoder {
public:
    // `logits`: the target's prediction after the session's last token. `draft`: the proposer
    // of SpecMode::Draft and Self (null otherwise). Throws ArgumentError for a sampled run with a
    // grammar (the grammar cannot follow rejected drafts) and for those modes without a proposer.
    SpeculativeDecoder(Session& session, Sampler& sampler, const SpecParams& params,
                       std::span<const float> logits, DraftProposer* draft = nullptr);

    TokenId next();
    // budget: output tokens still wanted after t (drafts beyond it are not proposed).
    void advance(TokenId t, int64_t budget);
    // Tokens the session holds beyond those a plain decoder would have fed by now.
    int64_t fed_ahead() const { return static_cast<int64_t>(ready_.size()) + (last_fed_ ? 1 : 0); }
    // Rolls the session back to what a plain decoder would hold (at the end of generation).
    void finish();
    const SpecStats& stats() const { return stats_; }

private:
    void verify(TokenId t, const DraftChain& draft);
    // Row i of the pass: kept tokens before it were accepted by the sampler already.
    int64_t judge_greedy(std::span<const float> rows, const DraftChain& draft);
    int64_t judge_sampled(std::span<const float> rows, const DraftChain& draft);
    void propose(TokenId t, int64_t k, DraftChain& out);

    Session& session_;
    Sampler& sampler_;
    SpecParams params_;
    SpecStats stats_;
    std::vector<float> logits_;     // to sample from when no token is ready
    std::deque<TokenId> ready_;     // accepted drafts: in the session, not yet handed out
    std::optional<TokenId> bonus_;  // the target's choice after a pass: not yet in the session
    bool last_fed_ = false;         // the token next() gave last is already in the session
    std::vector<TokenId> scratch_;
    DraftProposer* draft_;
    DraftChain chain_;
    SamplerRng rng_;          // acceptance draws and resamples (sampled runs)
    DraftLength length_;      // the chooser of k (auto_length)
    std::vector<float> p_;    // the target's dense distribution of one row
};

}  // namespace strata
