// Speculative sampling (Leviathan et al. 2023, Chen et al. 2023): the verdict on one drafted
// chain when the target samples at a temperature. Draft token i was drawn from the draft's
// distribution q_i (one-hot for prompt lookup); it is kept with probability
// min(1, p_i(d) / q_i(d)), where p_i is the target's sampling distribution after the tokens
// kept so far. At the first rejection the next token is drawn from max(0, p_i - q_i),
// normalised; when the whole chain is kept, from p_k. Every output token then follows the
// target's distribution exactly, whatever the draft proposes.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/sampler/sampler.h"
#include "engine/tokenizer/vocab.h"

namespace strata {

struct ChainVerdict {
    int64_t accepted = 0;  // draft tokens kept, a prefix of the chain
    TokenId next = -1;     // the token after them: a resample at the rejection, or a draw from p_k
};

// Dense probabilities by token id ([n_vocab], zero outside the candidates) of a sampler's
// candidate list.
void dense_probabilities(std::span<const Candidate> candidates, std::vector<float>& out);

// Index drawn from the (unnormalised, non-negative) weights; the last positive one on rounding.
// Throws Error when no weight is positive.
int64_t draw_index(std::span<const float> weights, double u);

// The verdict on `draft`. target_p(i) gives p_i as dense probabilities [n_vocab]; it is called
// for i = 0, 1, ... in order, and only after draft tokens 0..i-1 were kept (a sampler with
// penalties must have accepted them first). q[i] is the draft's dense distribution at i, or
// empty when token i was proposed with certainty (prompt lookup).
ChainVerdict judge_chain(std::span<const TokenId> draft, const std::function<std::span<const float>(int64_t i)>& target_p,
                         std::span<const std::vector<float>> q, SamplerRng& rng);

}  // namespace strata
