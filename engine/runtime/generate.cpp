// Prefill / decode loop with sampling and streaming detokenization (generate.h).
#include "engine/runtime/generate.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>

#include "engine/core/error.h"
#include "engine/core/timing.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "engine/sampler/sampler.h"
#include "engine/tokenizer/detokenizer.h"

namespace strata {
std::string_view stop_reason_name(StopReason reason) {
    switch (reason) {
        case StopReason::Length: return "length";
        case StopReason::EndOfGeneration: return "end of generation";
        case StopReason::ContextFull: return "context full";
        case StopReason::Callback: return "stopped";
    }
    return "?";
}

double GenerateStats::prompt_tokens_per_second() const {
    return prompt_seconds > 0 ? static_cast<double>(n_prompt) / prompt_seconds : 0.0;
}

double GenerateStats::decode_tokens_per_second() const {
    return decode_seconds > 0 ? static_cast<double>(n_generated) / decode_seconds : 0.0;
}

GenerateStats generate(Session& session, std::span<const TokenId> prompt,
                       const GenerateParams& params, const TextCallback& on_text) {
    if (prompt.empty()) throw ArgumentError("the prompt is empty: nothing to generate from");
    if (params.n_predict < -1) {
        throw ArgumentError(cat("-n must be -1 (until the end) or >= 0, got ", params.n_predict));
    }
    const Tokenizer& tokenizer = session.model().tokenizer();
    Sampler sampler(params.sampler, static_cast<int32_t>(session.model().weights().output.ne[1]));
    if (params.sampler.grammar) sampler.constrain(params.sampler.grammar, GrammarVocab::from_tokenizer(tokenizer));
    for (TokenId t : session.tokens()) sampler.accept(t);
    for (TokenId t : prompt) sampler.accept(t);

    GenerateStats stats;
    stats.seed = sampler.seed();
    stats.n_prompt = static_cast<int64_t>(prompt.size());
    auto start = std::chrono::steady_clock::now();
    std::span<const TokenId> unfed = prompt;
    const auto batch = static_cast<size_t>(std::max<int64_t>(1, session.n_batch()));
    while (params.on_prompt_progress && unfed.size() > batch) {  // the same passes as one feed()
        session.prefill(unfed.first(batch));
        unfed = unfed.subspan(batch);
        params.on_prompt_progress(static_cast<int64_t>(prompt.size() - unfed.size()), static_cast<int64_t>(prompt.size()));
    }
    std::span<const float> logits = session.feed(unfed);
    stats.prompt_seconds = seconds_since(start);

    Detokenizer detok(tokenizer);
    start = std::chrono::steady_clock::now();
    std::optional<DraftProposer> proposer;
    if (drafts_from_session(params.spec.mode) && params.draft != nullptr) proposer.emplace(*params.draft, params.sampler);
    std::optional<SpeculativeDecoder> spec;
    if (params.spec.mode != SpecMode::Off) {
        spec.emplace(session, sampler, params.spec, logits, proposer ? &*proposer : nullptr);
    }
    const auto next_token = [&] {
        if (spec) return spec->next();
        const TokenId t = sampler.sample(logits);
        sampler.accept(t);
        return t;
    };
    while (params.n_predict < 0 || stats.n_generated < params.n_predict) {
        const TokenId next = next_token();
        if (params.stop_at_eog && tokenizer.is_eog(next)) {
            stats.stop = StopReason::EndOfGeneration;
            break;
        }
        ++stats.n_generated;
        const std::string text = detok.push(next);
        if (!text.empty() && !on_text(text)) {
            stats.stop = StopReason::Callback;
            break;
        }
        if (params.n_predict >= 0 && stats.n_generated >= params.n_predict) break;
        // What a plain decoder's session would hold now: everything before `next`.
        const int64_t held = static_cast<int64_t>(session.tokens().size()) - (spec ? spec->fed_ahead() : 0);
        if (held >= session.n_ctx()) {
            stats.stop = StopReason::ContextFull;
            break;
        }
        if (!spec) {
            logits = session.feed({&next, 1});
        } else {
            spec->advance(next, params.n_predict < 0 ? std::numeric_limits<int64_t>::max()
                                                     : params.n_predict - stats.n_generated);
        }
    }
    if (spec) {
        spec->finish();
        stats.spec = spec->stats();
    }
    stats.decode_seconds = seconds_since(start);
    const std::string rest = detok.flush();
    if (!rest.empty()) on_text(rest);
    return stats;
}

}  // namespace strata
