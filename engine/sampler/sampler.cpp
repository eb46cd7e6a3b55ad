// Sampler: checks the logits, applies the stages in llama.cpp's default order and draws.
// The order matters: min-p and top-p see untempered probabilities, temperature only the survivors.
#include "engine/sampler/sampler.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace strata {
namespace {

uint32_t resolve_seed(uint32_t seed) {
    if (seed != SamplerParams::kRandomSeed) return seed;
    std::random_device device;
    uint32_t drawn = device();
    // kRandomSeed means "random", so it cannot also be the seed that seed() reports.
    while (drawn == SamplerParams::kRandomSeed) drawn = device();
    return drawn;
}

const SamplerParams& validated(const SamplerParams& params) {
    params.validate();
    return params;
}

}  // namespace

Sampler::Sampler(const SamplerParams& params, int32_t n_vocab)
    : params_(validated(params)),
      n_vocab_(n_vocab),
      seed_(resolve_seed(params.seed)),
      rng_(seed_),
      history_(params.penalties_active() ? params.repeat_last_n : 0) {
    if (n_vocab <= 0) {
        throw ArgumentError(cat("sampler: n_vocab = ", n_vocab, " must be positive"));
    }
    for (const auto& [id, bias] : params_.logit_bias) {
        if (id >= n_vocab) {
            throw ArgumentError(cat("sampler: logit_bias token id ", id,
                                    " is outside the vocabulary [0, ", n_vocab, ")"));
        }
    }
    work_.resize(static_cast<size_t>(n_vocab));
    list_.tokens.reserve(static_cast<size_t>(n_vocab));
}

LogitScan Sampler::checked(std::span<const float> logits) const {
    if (logits.size() != work_.size()) {
        throw ArgumentError(cat("sampler: got ", logits.size(), " logits, expected n_vocab = ",
                                n_vocab_));
    }
    // One vectorized pass; the slow search only on failure.
    const LogitScan scan = scan_logits(logits);
    if (!scan.valid) {
        const auto it = std::find_if(logits.begin(), logits.end(),
                                     [](float x) { return !(x < INFINITY); });
        throw ArgumentError(cat("sampler: logit of token ", it - logits.begin(), " is ", *it,
                                "; logits must be finite or -inf"));
    }
    return scan;
}

void Sampler::throw_all_banned() const {
    throw ArgumentError(cat("sampler: all ", n_vocab_, " logits are -inf after logit-bias",
                            grammar_ ? " and the grammar (no token continues it)" : "", "; nothing can be sampled"));
}

bool Sampler::edits_logits() const {
    return !params_.logit_bias.empty() || params_.penalties_active() || grammar_ != nullptr;
}

void Sampler::prepare_logits(std::span<const float> logits) {
    checked(logits);
    std::copy(logits.begin(), logits.end(), work_.begin());
    apply_logit_bias(work_, params_.logit_bias);
    if (params_.penalties_active()) {
        apply_penalties(work_, history_,
                        PenaltyParams{params_.repeat_penalty, params_.presence_penalty,
                                      params_.frequency_penalty});
    }
    if (grammar_) grammar_->mask(work_);
    // Usually exits at token 0.
    if (std::none_of(work_.begin(), work_.end(), [](float x) { return x > -INFINITY; })) throw_all_banned();
}

void Sampler::run_chain() {
    if (greedy()) {
        const size_t best = first_max_index(work_);  // argmax_index's pick: ties to the lowest id
        list_.tokens.assign(1, Candidate{static_cast<int32_t>(best), work_[best], 1.0f});
        list_.sorted = true;
        return;
    }
    if (params_.top_k > 0) {
        list_.assign_top_k(work_, static_cast<size_t>(params_.top_k));  // what assign + apply_top_k keep
    } else {
        list_.assign(work_);
    }
    apply_top_k(list_, params_.top_k);
    apply_top_p(list_, params_.top_p);
    apply_min_p(list_, params_.min_p);
    apply_temperature(list_, params_.temperature);
    softmax(list_);
}

std::span<const Candidate> Sampler::candidates(std::span<const float> logits) {
    prepare_logits(logits);
    run_chain();
    return list_.tokens;
}

int32_t Sampler::sample(std::span<const float> logits) {
    if (greedy() && !edits_logits()) {  // the argmax of the logits as they are: no copy
        const LogitScan scan = checked(logits);
        if (scan.max == -INFINITY) throw_all_banned();
        return static_cast<int32_t>(first_index_of(logits, scan.max));  // ties: the lowest id
    }
    prepare_logits(logits);
    if (greedy()) {
        const size_t best = first_max_index(work_);  // the lowest id among equal maxima
        if (grammar_) grammar_->accept(static_cast<int32_t>(best));
        return static_cast<int32_t>(best);
    }
    run_chain();
    const int32_t token = list_.tokens[pick_index(list_, rng_.uniform01())].id;
    if (grammar_) grammar_->accept(token);
    return token;
}

void Sampler::constrain(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocab> vocab) {
    grammar_ = std::make_unique<GrammarConstraint>(std::move(grammar), std::move(vocab));
}

void Sampler::accept(int32_t token) {
    if (token < 0 || token >= n_vocab_) {
        throw ArgumentError(cat("sampler: accepted token ", token,
                                " is outside the vocabulary [0, ", n_vocab_, ")"));
    }
    history_.push(token);
}

void Sampler::reset() {
    history_.clear();
    rng_.reseed(seed_);
    if (grammar_) grammar_->reset();
}

}  // namespace strata
