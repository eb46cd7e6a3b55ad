// Prompt-lookup proposals and greedy verification in one forward pass (speculate.h).
#include "engine/runtime/speculate.h"

#include <algorithm>
#include <limits>

#include "engine/core/error.h"
#include "engine/runtime/session.h"
#include "engine/sampler/sampler.h"

namespace strata {

SpecMode parse_spec_mode(std::string_view text) {
    if (text == "off") return SpecMode::Off;
    if (text == "lookup") return SpecMode::Lookup;
    throw ArgumentError(cat("--spec must be lookup or off, got '", text, "'"));
}

std::string_view spec_mode_name(SpecMode mode) {
    return mode == SpecMode::Lookup ? "lookup" : "off";
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
                                       std::span<const float> logits)
    : session_(session), sampler_(sampler), params_(params), logits_(logits.begin(), logits.end()) {
    if (sampler.params().temperature > 0.0f) {
        throw ArgumentError(cat("speculative decoding needs greedy sampling (temperature <= 0), got temperature ",
                                sampler.params().temperature));
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

void SpeculativeDecoder::advance(TokenId t, int64_t budget) {
    if (last_fed_) return;
    // Room for t and the draft in the context; a pass yields up to draft + 1 tokens.
    const int64_t room = session_.n_ctx() - static_cast<int64_t>(session_.tokens().size()) - 1;
    const int64_t k = std::min({params_.draft_max, budget - 1, room});
    if (k >= std::max<int64_t>(params_.draft_min, 1)) {
        scratch_.assign(session_.tokens().begin(), session_.tokens().end());
        scratch_.push_back(t);
        const std::vector<TokenId> draft = propose_lookup(scratch_, k, params_.max_ngram);
        if (!draft.empty() && static_cast<int64_t>(draft.size()) >= params_.draft_min) return verify(t, draft);
    }
    const std::span<const float> logits = session_.feed({&t, 1});
    logits_.assign(logits.begin(), logits.end());
}

void SpeculativeDecoder::verify(TokenId t, std::span<const TokenId> draft) {
    const int64_t base = static_cast<int64_t>(session_.tokens().size());
    const int64_t k = static_cast<int64_t>(draft.size());
    scratch_.assign(1, t);
    scratch_.insert(scratch_.end(), draft.begin(), draft.end());
    const std::span<const float> rows = session_.feed_all(scratch_);
    const size_t n_vocab = rows.size() / static_cast<size_t>(k + 1);
    int64_t accepted = 0;
    for (int64_t i = 0; i <= k; ++i) {
        const TokenId choice = sampler_.sample(rows.subspan(static_cast<size_t>(i) * n_vocab, n_vocab));
        if (i == k || choice != draft[static_cast<size_t>(i)]) {
            bonus_ = choice;
            break;
        }
        sampler_.accept(choice);
        ready_.push_back(choice);
        ++accepted;
    }
    // Forget the rejected drafts: their cells are rewritten by the next pass.
    session_.truncate(base + 1 + accepted);
    ++stats_.passes;
    stats_.proposed += k;
    stats_.accepted += accepted;
}

void SpeculativeDecoder::finish() {
    const int64_t held = static_cast<int64_t>(session_.tokens().size());
    session_.truncate(held - fed_ahead());
    ready_.clear();
    last_fed_ = false;
}

}  // namespace strata
