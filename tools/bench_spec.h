// strata bench's speculation rows (--spec): generation of n tokens from one prompt, greedy,
// with and without speculation, on the same prompt (-f FILE, or a synthetic one: 64 random
// tokens said twice, so that prompt lookup has something to find). Tokens/s of the decode and
// the accepted tokens per verifying pass.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/runtime/generate.h"
#include "engine/runtime/session.h"

namespace strata::cli {

struct GenRun {
    double tokens_per_second = 0;  // decode
    SpecStats spec;
};

// Generates n tokens after `prompt` on a cleared session (and a draft session when given).
GenRun generate_once(Session& session, const std::vector<TokenId>& prompt, int64_t n, const SpecParams& spec,
                     Session* draft);

// The synthetic prompt: 64 tokens drawn with `seed` from [0, n_vocab), said twice.
std::vector<TokenId> repeated_prompt(int64_t n_vocab, uint32_t seed);

}  // namespace strata::cli
