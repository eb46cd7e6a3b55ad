// A draft model for speculative decoding (issue 25): a small model with the target's vocabulary
// proposes the next few tokens from its own session, which follows the target's text (the
// tokens both hold in common are kept, the rest fed again). Greedy runs take the draft's argmax;
// sampled runs draw from the draft's own sampling distribution q and hand q to the verifier,
// which needs it for rejection sampling (spec_sampling.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/sampler/sampler.h"
#include "engine/tokenizer/vocab.h"

namespace strata {

class Model;
class Session;

// Refuses (ArgumentError) a draft whose vocabulary differs from the target's: the token count,
// the logits width, the tokenizer model or any token's text. The message names both files and
// both sizes (or the first token that differs).
void check_draft_vocabulary(const Model& target, const std::string& target_path, const Model& draft,
                            const std::string& draft_path);

// The draft's proposals: tokens, and their distributions when they were sampled.
struct DraftChain {
    std::vector<TokenId> tokens;
    std::vector<std::vector<float>> q;  // [tokens][n_vocab] when sampled; empty when greedy
};

class DraftProposer {
public:
    // `session` runs the draft model; `sampler` are the target's sampling params (the draft samples
    // with the same temperature, truncation and penalties; a grammar is not applied to drafts).
    DraftProposer(Session& session, const SamplerParams& sampler);

    // Up to k tokens that follow `history` (fewer near the end of the draft's context).
    void propose(std::span<const TokenId> history, int64_t k, DraftChain& out);
    bool sampled() const { return sampled_; }

private:
    // Brings the session to `history`; returns the logits after its last token.
    std::span<const float> follow(std::span<const TokenId> history);

    Session& session_;
    Sampler sampler_;
    SamplerRng rng_;
    bool sampled_;
};

}  // namespace strata
