// Prompt-lookup proposals, and verification of a draft in one forward pass (speculate.h).
#include "engine/runtime/speculate.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "engine/core/error.h"
#include "engine/core/timing.h"
#include "engine/runtime/session.h"
#include "engine/runtime/spec_sampling.h"
#include "engine/sampler/sampler.h"

namespace strata {
SpecMode parse_spec_mode(std::string_view text) {
    if (text == "off") return SpecMode::Off;
    if (text == "lookup") return SpecMode::Lookup;
    if (text == "draft") return SpecMode::Draft;
    if (text == "self") return SpecMode::Self;
    throw ArgumentError(cat("--spec must be lookup, draft, self or off, got '", text, "'"));
}

std::string_view spec_mode_name(SpecMode mode) {
    switch (mode) {
        case SpecMode::Lookup: return "lookup";
        case SpecMode::Draft: return "draft";
        case SpecMode::Self: return "self";
        case SpecMode::Off: break;
    }
    return "off";
}

void SpecParams::validate(int64_t n_batch) const {
    const int64_t max = std::min(kMaxDraft, n_batch - 1);
    if (max < 1) {
        throw ArgumentError(cat("speculation needs a batch of at least 2 tokens (-b), got ", n_batch));
    }
    if (draft_max < 1 || draft_max > max) {
        throw ArgumentError(cat("--draft-max must be in 1..", max, " (at most ", kMaxDraft,
                                " and below the batch size -b ", n_batch, "), got ", draft_max));
    }
    if (draft_min < 0 || draft_min > draft_max) {
        throw ArgumentError(cat("--draft-min must be in 0..", draft_max, " (--draft-max), got ", draft_min));
    }
    if (max_ngram < 1) throw ArgumentError(cat("lookup n-gram length must be >= 1, got ", max_ngram));
}

std::vector<TokenId> propose_lookup(std::span<const TokenId> history, int64_t max_tokens, int max_ngram) {
    const int64_t len = static_cast<int64_t>(history.size());
    if (max_tokens <= 0) return {};
    for (int64_t n = std::min<int64_t>(max_ngram, len - 1); n >= 1; --n) {
        const auto pattern = history.subspan(static_cast<size_t>(len - n));
        // The most recent earlier occurrence: it starts before the pattern's own start.
        for (int64_t i = len - n - 1; i >= 0; --i) {
            const auto at = history.subspan(static_cast<size_t>(i), static_cast<size_t>(n));
            if (!std::equal(at.begin(), at.end(), pattern.begin())) continue;
            const int64_t from = i + n;
            const int64_t to = std::min(len, from + max_tokens);
            return {history.begin() + from, history.begin() + to};
        }
    }
    return {};
}

SpeculativeDecoder::SpeculativeDecoder(Session& session, Sampler& sampler, const SpecParams& params,
                                       std::span<const float> logits, DraftProposer* draft)
    : session_(session),
      sampler_(sampler),
      params_(params),
      logits_(logits.begin(), logits.end()),
      draft_(draft),
      rng_(sampler.seed() ^ 0x2545f491u),
      length_(std::max<int64_t>(1, params.draft_max), params.prior) {
    if (sampler.params().temperature > 0.0f && sampler.params().grammar) {
        throw ArgumentError(cat("speculative decoding with a grammar needs greedy sampling (--temp 0), got temperature ",
                                sampler.params().temperature));
    }
    if (params.mode == SpecMode::Draft && draft == nullptr) {
        throw ArgumentError("--spec draft needs a draft model (-md FILE)");
    }
    if (params.mode == SpecMode::Self && draft == nullptr) {
        throw ArgumentError("--spec self needs the target's self-draft session (Runtime::new_self_draft_session)");
    }
    params_.validate(session.n_batch());
}

TokenId SpeculativeDecoder::next() {
    if (!ready_.empty()) {
        const TokenId t = ready_.front();  // the sampler accepted it during the pass
        ready_.pop_front();
        last_fed_ = true;
        return t;
    }
    last_fed_ = false;
    const TokenId t = bonus_ ? *bonus_ : sampler_.sample(logits_);
    bonus_.reset();
    sampler_.accept(t);
    return t;
}

void SpeculativeDecoder::propose(TokenId t, int64_t k, DraftChain& out) {
    const auto start = std::chrono::steady_clock::now();
    scratch_.assign(session_.tokens().begin(), session_.tokens().end());
    scratch_.push_back(t);
    if (draft_ != nullptr) {
        draft_->propose(scratch_, k, out);
    } else {
        out.q.clear();
        out.tokens = propose_lookup(scratch_, k, params_.max_ngram);
    }
    if (!out.tokens.empty()) length_.observe_draft(static_cast<int64_t>(out.tokens.size()), seconds_since(start));
}

void SpeculativeDecoder::advance(TokenId t, int64_t budget) {
    if (last_fed_) return;
    // Room for t and the draft in the context; a pass yields up to draft + 1 tokens.
    const int64_t room = session_.n_ctx() - static_cast<int64_t>(session_.tokens().size()) - 1;
    const int64_t want = params_.auto_length ? length_.choose() : params_.draft_max;
    const int64_t k = std::min({want, budget - 1, room});
    if (k >= std::max<int64_t>(params_.draft_min, 1)) {
        propose(t, k, chain_);
        const auto n = static_cast<int64_t>(chain_.tokens.size());
        if (n > 0 && n >= params_.draft_min) return verify(t, chain_);
    }
    const auto start = std::chrono::steady_clock::now();
    const std::span<const float> logits = session_.feed({&t, 1});
    logits_.assign(logits.begin(), logits.end());
    length_.observe_pass(1, seconds_since(start));
}

int64_t SpeculativeDecoder::judge_greedy(std::span<const float> rows, const DraftChain& draft) {
    const int64_t k = static_cast<int64_t>(draft.tokens.size());
    const size_t n_vocab = rows.size() / static_cast<size_t>(k + 1);
    int64_t accepted = 0;
    for (int64_t i = 0; i <= k; ++i) {
        const TokenId choice = sampler_.sample(rows.subspan(static_cast<size_t>(i) * n_vocab, n_vocab));
        if (i == k || choice != draft.tokens[static_cast<size_t>(i)]) {
            bonus_ = choice;
            break;
        }
        sampler_.accept(choice);
        ready_.push_back(choice);
        ++accepted;
    }
    return accepted;
}

int64_t SpeculativeDecoder::judge_sampled(std::span<const float> rows, const DraftChain& draft) {
    const int64_t k = static_cast<int64_t>(draft.tokens.size());
    const size_t n_vocab = rows.size() / static_cast<size_t>(k + 1);
    p_.resize(n_vocab);
    const auto target_p = [&](int64_t i) -> std::span<const float> {
        if (i > 0) {  // token i - 1 was kept: the penalties see it before row i
            const TokenId kept = draft.tokens[static_cast<size_t>(i - 1)];
            sampler_.accept(kept);
            ready_.push_back(kept);
        }
        dense_probabilities(sampler_.candidates(rows.subspan(static_cast<size_t>(i) * n_vocab, n_vocab)), p_);
        return p_;
    };
    const ChainVerdict v = judge_chain(draft.tokens, target_p, draft.q, rng_);
    bonus_ = v.next;
    return v.accepted;
}

void SpeculativeDecoder::verify(TokenId t, const DraftChain& draft) {
    const int64_t base = static_cast<int64_t>(session_.tokens().size());
    const int64_t k = static_cast<int64_t>(draft.tokens.size());
    scratch_.assign(1, t);
    scratch_.insert(scratch_.end(), draft.tokens.begin(), draft.tokens.end());
    const auto start = std::chrono::steady_clock::now();
    const std::span<const float> rows = session_.feed_all(scratch_);
    length_.observe_pass(k + 1, seconds_since(start));
    const int64_t accepted = sampler_.params().temperature > 0.0f ? judge_sampled(rows, draft) : judge_greedy(rows, draft);
    // Forget the rejected drafts: their cells are rewritten by the next pass.
    session_.truncate(base + 1 + accepted);
    ++stats_.passes;
    stats_.proposed += k;
    stats_.accepted += accepted;
    length_.observe_verdict(k, accepted);
}

void SpeculativeDecoder::finish() {
    const int64_t held = static_cast<int64_t>(session_.tokens().size());
    session_.truncate(held - fed_ahead());
    ready_.clear();
    last_fed_ = false;
}

}  // namespace strata
