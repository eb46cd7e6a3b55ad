// One sequence of the scheduler: prefix reuse, chunked prefill, decode and sampling (slot.h).
#include "engine/server/slot.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/speculate.h"

namespace strata::server {

Slot::Slot(std::unique_ptr<Session> session, int64_t chunk_tokens, SpecParams spec)
    : session_(std::move(session)), chunk_tokens_(std::max<int64_t>(1, chunk_tokens)), spec_(spec) {
    if (spec_.mode != SpecMode::Lookup) spec_.mode = SpecMode::Off;
    spec_.draft_max = std::min(spec_.draft_max, chunk_tokens_ - 1);  // the verifying pass fits a chunk
    if (spec_.draft_max < 1) spec_.mode = SpecMode::Off;
}

int64_t Slot::reusable_prefix(std::span<const TokenId> prompt) const {
    const std::vector<TokenId>& held = session_->tokens();
    const auto mismatch = std::mismatch(held.begin(), held.end(), prompt.begin(), prompt.end());
    const int64_t common = mismatch.first - held.begin();
    return std::min<int64_t>(common, static_cast<int64_t>(prompt.size()) - 1);
}

void Slot::start(std::shared_ptr<Job> job) {
    STRATA_INVARIANT(!busy());
    const JobSpec& spec = job->spec();
    const int64_t keep = spec.cache_prompt ? reusable_prefix(spec.prompt) : 0;
    session_->truncate(keep);
    job_ = std::move(job);
    next_prompt_ = static_cast<size_t>(keep);
    result_ = JobResult{};
    result_.n_prompt = static_cast<int64_t>(spec.prompt.size());
    result_.n_reused = keep;
    const Model& model = session_->model();
    sampler_ = std::make_unique<Sampler>(spec.sampler, static_cast<int32_t>(model.weights().output.ne[1]));
    if (spec.sampler.grammar) {
        if (!grammar_vocab_) grammar_vocab_ = GrammarVocab::from_tokenizer(model.tokenizer());
        sampler_->constrain(spec.sampler.grammar, grammar_vocab_);
    }
    for (TokenId t : spec.prompt) sampler_->accept(t);
    detok_ = std::make_unique<Detokenizer>(model.tokenizer());
    stop_ = std::make_unique<StopMatcher>(spec.stop);
}

StepStats Slot::step(bool alone) {
    StepStats stats;
    if (!busy()) return stats;
    if (job_->cancelled()) {
        abort(499, "the client closed the connection");
        return stats;
    }
    const std::vector<TokenId>& prompt = job_->spec().prompt;
    try {
        if (next_prompt_ < prompt.size()) {
            const std::span<const TokenId> chunk = next_chunk();
            const size_t n = chunk.size();
            next_prompt_ += n;
            stats.n_prefilled = static_cast<int64_t>(n);
            if (next_prompt_ < prompt.size()) {
                session_->prefill(chunk);  // not the last chunk: no logits needed
                return stats;
            }
            emit(session_->feed(chunk));
        } else if (alone && speculates()) {
            stats = decode_lookup();
        } else {
            stats.n_decoded = 1;
            emit(session_->feed({&next_token_, 1}));
        }
    } catch (const std::exception& e) {
        fail(e.what());  // the session may hold part of a chunk's KV: forget it all
    }
    return stats;
}

std::span<const TokenId> Slot::next_chunk() const {
    if (!prefilling()) return {};
    const std::vector<TokenId>& prompt = job_->spec().prompt;
    const size_t n = std::min(static_cast<size_t>(chunk_tokens_), prompt.size() - next_prompt_);
    return {prompt.data() + next_prompt_, n};
}

void Slot::took_rows(int64_t prompt_rows, std::span<const float> logits) {
    if (prompt_rows > 0) {
        next_prompt_ += static_cast<size_t>(prompt_rows);
        if (next_prompt_ < job_->spec().prompt.size()) return;  // not the last chunk: no token yet
    }
    take_logits(logits);
}

bool Slot::speculates() const {
    return spec_.mode == SpecMode::Lookup && job_->spec().sampler.temperature <= 0;
}

StepStats Slot::decode_lookup() {
    std::vector<TokenId> tokens = session_->tokens();
    const int64_t base = static_cast<int64_t>(tokens.size());
    tokens.push_back(next_token_);
    // No draft beyond what the job may still generate or the context hold.
    // The cache stays below full while the rows are sampled (a full one ends a job early).
    const int64_t room = std::min(job_->spec().max_tokens - result_.n_generated - 1, session_->n_ctx() - base - 2);
    const std::vector<TokenId> draft =
        room >= 1 ? propose_lookup(tokens, std::min(spec_.draft_max, room), spec_.max_ngram) : std::vector<TokenId>{};
    StepStats stats;
    stats.n_decoded = 1;  // tokens produced (rejected draft tokens are not counted)
    if (draft.empty() || static_cast<int64_t>(draft.size()) < spec_.draft_min) {
        emit(session_->feed({&next_token_, 1}));
        return stats;
    }
    std::vector<TokenId> batch{next_token_};
    batch.insert(batch.end(), draft.begin(), draft.end());
    const std::span<const float> logits = session_->feed_all(batch);  // [batch.size(), n_vocab]
    const size_t n_vocab = logits.size() / batch.size();
    stats.n_spec_passes = 1;
    stats.n_spec_proposed = static_cast<int64_t>(draft.size());
    for (size_t i = 0; i < batch.size(); ++i) {
        emit(logits.subspan(i * n_vocab, n_vocab));
        // Row i's token is in the cache when it equals draft[i]; the rest of the draft is not.
        if (!busy() || i == draft.size() || next_token_ != draft[i]) {
            session_->truncate(base + static_cast<int64_t>(i) + 1);
            return stats;
        }
        ++stats.n_spec_accepted;
        ++stats.n_decoded;
    }
    return stats;
}

bool Slot::drop_if_gone(double timeout_s) {
    if (!busy()) return false;
    if (job_->cancelled()) {
        abort(499, "the client closed the connection");
        return true;
    }
    if (job_->past_deadline(timeout_s)) {
        abort(504, cat("the request ran past the server's --request-timeout of ", timeout_s, " s (",
                       result_.n_generated, " tokens generated)"));
        return true;
    }
    return false;
}

void Slot::take_logits(std::span<const float> logits) {
    try {
        emit(logits);
    } catch (const std::exception& e) {
        fail(e.what());
    }
}

void Slot::fail(const std::string& message) {
    session_->clear();
    abort(500, "generation failed: " + message);
}

void Slot::emit(std::span<const float> logits) {
    const TokenId token = sampler_->sample(logits);
    sampler_->accept(token);
    if (session_->model().tokenizer().is_eog(token) && !job_->spec().ignore_eos) {
        end(FinishReason::Stop);
        return;
    }
    ++result_.n_generated;
    if (job_->spec().logprobs >= 0) {
        job_->add_logprob(token_logprob(logits, token, job_->spec().logprobs, session_->model().tokenizer()));
    }
    const std::string text = stop_->push(detok_->push(token));
    if (!text.empty()) job_->append(text);
    if (stop_->stopped()) {
        end(FinishReason::Stop);
    } else if (result_.n_generated >= job_->spec().max_tokens ||
               session_->kv_cache().n_used() >= session_->n_ctx()) {
        end(FinishReason::Length);
    } else {
        next_token_ = token;
    }
}

void Slot::end(FinishReason reason) {
    std::string rest = stop_->push(detok_->flush());
    if (stop_->stopped()) {
        reason = FinishReason::Stop;
    } else {
        rest += stop_->flush();
    }
    if (!rest.empty()) job_->append(rest);
    result_.finish = reason;
    job_->finish(result_);
    release();
}

void Slot::abort(int status, const std::string& message) {
    if (!busy()) return;
    result_.status = status;
    result_.error = message;
    job_->finish(result_);
    release();
}

void Slot::release() {
    job_.reset();
    sampler_.reset();
    detok_.reset();
    stop_.reset();
}

}  // namespace strata::server
