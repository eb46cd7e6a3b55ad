// Sampler: turns one row of logits into a token, through llama.cpp's default chain
// logit-bias -> penalties -> grammar -> top-k -> top-p -> min-p -> temperature -> random draw.
// temperature <= 0 is greedy: argmax after bias and penalties, ties to the lowest id.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "engine/sampler/grammar_constraint.h"
#include "engine/sampler/penalties.h"
#include "engine/sampler/sampler_params.h"
#include "engine/sampler/sampler_stages.h"

namespace strata {

// The sampler's random source. std::mt19937's output sequence is fixed by the standard, but the
// standard distributions are not, so draws are built here from raw 32-bit outputs: the same
// seed gives the same tokens with every compiler and standard library.
class SamplerRng {
public:
    explicit SamplerRng(uint32_t seed) : engine_(seed) {}

    void reseed(uint32_t seed) { engine_.seed(seed); }

    // Uniform in [0, 1) with 53 random bits: 27 from one output, 26 from the next.
    double uniform01() {
        const uint64_t high = engine_() >> 5;
        const uint64_t low = engine_() >> 6;
        return static_cast<double>((high << 26) | low) * 0x1.0p-53;
    }

private:
    std::mt19937 engine_;
};

// One Sampler per generated sequence. Not thread-safe: it owns scratch buffers, the random
// state and the penalty history. sample() and candidates() allocate nothing after their first
// call (the top-k scratch is sized then).
class Sampler {
public:
    // Validates params (ArgumentError) and checks logit_bias ids against n_vocab.
    // params.seed == kRandomSeed draws a seed from std::random_device; seed() reports it.
    Sampler(const SamplerParams& params, int32_t n_vocab);

    // logits: [n_vocab], by token id, not modified. Values must be finite or -inf, and at least
    // one must survive logit-bias as finite (else ArgumentError). Returns a token id.
    int32_t sample(std::span<const float> logits);

    // Runs the chain without the draw: the surviving tokens with their final probabilities
    // (after temperature; sum ~ 1). Greedy gives one token with p = 1. The span stays valid
    // until the next call of sample() or candidates().
    std::span<const Candidate> candidates(std::span<const float> logits);

    // Keeps sampled tokens inside `grammar` (the grammar stage masks every token that cannot
    // continue it; sample() advances it past the token it returns). reset() restarts it.
    void constrain(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocab> vocab);

    // Records a token (sampled or forced, e.g. the prompt) for the penalties.
    void accept(int32_t token);

    // Forgets the history and restarts the random sequence from seed(): after reset() the
    // sampler repeats the draws it made after construction.
    void reset();

    uint32_t seed() const { return seed_; }
    int32_t n_vocab() const { return n_vocab_; }
    const SamplerParams& params() const { return params_; }

private:
    bool greedy() const { return params_.temperature <= 0.0f; }
    // The size and values checked (ArgumentError naming the first bad one), in one pass that
    // also finds the largest.
    LogitScan checked(std::span<const float> logits) const;
    [[noreturn]] void throw_all_banned() const;
    bool edits_logits() const;  // logit-bias, penalties or a grammar change the logits
    void prepare_logits(std::span<const float> logits);  // checks, copies, bias, penalties
    void run_chain();                                     // work_ -> list_, filtered, softmaxed

    SamplerParams params_;
    int32_t n_vocab_;
    uint32_t seed_;
    SamplerRng rng_;
    TokenHistory history_;
    std::vector<float> work_;  // [n_vocab] logits after bias and penalties
    CandidateList list_;
    std::unique_ptr<GrammarConstraint> grammar_;
};

}  // namespace strata
