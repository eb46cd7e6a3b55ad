// How the placers see a model's tensors (the built-in placement and the cost model that the
// planner searches with): a coarser grouping than TensorRole, assigned here once per table.
#pragma once

#include <optional>
#include <vector>

#include "offload/placement.h"

namespace strata {

enum class TensorClass {
    Small,        // ne[1] == ne[2] == ne[3] == 1: norms, biases; never multiplied, never on DISK
    TokenEmbd,    // untied token_embd: get_rows only; never on DISK
    Output,       // output.weight, or token_embd when tied; never on DISK
    Attn,         // a layer's attn_* matrices
    Ffn,          // a layer's splittable ffn_gate / ffn_up / ffn_down (find_ffn_tensors)
    LayerOther,   // other matrices of a layer (MoE experts and router, ...)
    GlobalOther,  // other global tensors; kept in memory, not multiplied
};

struct TensorClasses {
    std::vector<TensorClass> of;                 // per table tensor
    std::vector<int> layer;                      // per table tensor: its block in [0, n_layer), else -1
    std::vector<std::optional<FfnTensors>> ffn;  // per layer: its splittable FFN
    int output = -1;      // output.weight; -1 when the embedding is tied
    int token_embd = -1;  // token_embd (class Output when tied)
    int output_matrix() const { return output >= 0 ? output : token_embd; }  // what the logits read
};

TensorClasses classify_tensors(const TensorTable& table);

}  // namespace strata
