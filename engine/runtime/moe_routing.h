// Top-k routing of a batch of tokens over a layer's experts, on the host: per token the experts
// it uses and their weights, and per expert the tokens routed to it (prefill groups a batch by
// expert, so each expert's matrices are read once per batch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata {

struct RoutingParams {
    int64_t n_expert = 0;
    int64_t n_used = 0;       // top-k, 1 <= n_used <= n_expert
    bool norm_topk = true;    // renormalise the kept probabilities to sum 1
    float scale = 1.0f;       // then multiply them by this
};

struct MoeRouting {
    int64_t n_tokens = 0;
    int64_t n_used = 0;
    // Slot s = t * n_used + j: token t's j-th choice (highest probability first).
    std::vector<int32_t> expert;  // [n_tokens * n_used]
    std::vector<float> weight;    // [n_tokens * n_used]
    // Expert e's slots are by_expert[offsets[e] .. offsets[e+1]), in token order.
    std::vector<int32_t> offsets;    // [n_expert + 1]
    std::vector<int32_t> by_expert;  // [n_tokens * n_used]

    int64_t token_of(int32_t slot) const { return slot / n_used; }
    int64_t n_routed(int64_t e) const { return offsets[static_cast<std::size_t>(e) + 1] - offsets[static_cast<std::size_t>(e)]; }
};

// logits [n_expert, n_tokens] (f32, token-major rows): probabilities are the softmax over all
// n_expert logits of a token; the n_used largest are kept (ties: the lower expert index), then
// renormalised and scaled as `params` says. (Softmax, top-k, renormalise equals Mixtral's
// softmax over the top-k logits.) Reuses `out`'s storage.
void route_tokens(const float* logits, int64_t n_tokens, const RoutingParams& params, MoeRouting& out);

}  // namespace strata
