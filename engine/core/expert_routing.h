// Top-k routing of one token over a layer's experts: the softmax of the router's logits, its k
// largest probabilities kept, renormalised and scaled. The host's routing of a batch
// (engine/runtime/moe_routing.h) and the backends' routed expert FFN (Backend::routed_expert_ffn)
// share this definition; a device kernel computes the same.
#pragma once

#include <cstdint>

namespace strata {

struct ExpertTopK {
    int64_t n_used = 0;       // k, 1 <= k <= the expert count
    bool norm_topk = true;    // renormalise the kept probabilities to sum 1
    float scale = 1.0f;       // then multiply them by this
};

// logits [n_expert] -> ids [k] (highest probability first; ties: the lower expert index) and
// their weights [k]: p_e = softmax(logits)_e, times scale / Σ_kept p when norm_topk, else times
// scale. (Softmax, top-k, renormalise equals Mixtral's softmax over the top-k logits.)
// `prob` is caller scratch of n_expert floats.
void route_top_k(const float* logits, int64_t n_expert, const ExpertTopK& p, int32_t* ids, float* weights,
                 float* prob);

}  // namespace strata
