// ModelWeights: every weight of a model as Tensor views, grouped per layer, bound by name from
// a validated ModelFile. The views point into the file mapping (or, later, into the tier each
// tensor was placed in); nothing is copied here.
#pragma once

#include <vector>

#include "engine/core/tensor.h"

namespace strata {

class ModelFile;
struct ModelConfig;

// A weight the architecture does not have is an empty Tensor (data == nullptr).
struct LayerWeights {
    Tensor attn_norm;                  // [n_embd]
    Tensor attn_q, attn_k, attn_v;     // [n_embd, n_head*hd_k], [n_embd, n_head_kv*hd_k], [.., hd_v]
    Tensor attn_q_bias, attn_k_bias, attn_v_bias;  // qwen2
    Tensor attn_q_norm, attn_k_norm;   // [hd_k] (qwen3, gemma3)
    Tensor attn_output;                // [n_head*hd_v, n_embd]
    Tensor post_attention_norm;        // [n_embd] (gemma)
    Tensor ffn_norm;                   // [n_embd]
    Tensor ffn_gate, ffn_up;           // [n_embd, n_ff] (dense models)
    Tensor ffn_down;                   // [n_ff, n_embd]
    Tensor post_ffw_norm;              // [n_embd] (gemma)
    // Mixture of experts (ModelConfig::is_moe): expert e of a 3-D tensor is its slice ne[2] = e.
    Tensor ffn_gate_inp;                    // router [n_embd, n_expert]
    Tensor ffn_gate_exps, ffn_up_exps;      // [n_embd, n_ff_exp, n_expert]
    Tensor ffn_down_exps;                   // [n_ff_exp, n_embd, n_expert]
    Tensor ffn_gate_shexp, ffn_up_shexp;    // [n_embd, n_ff_shexp] (shared expert, qwen2moe)
    Tensor ffn_down_shexp;                  // [n_ff_shexp, n_embd]
    Tensor ffn_gate_inp_shexp;              // [n_embd]
};

// Expert e of a 3-D expert tensor [ne0, ne1, n_expert] as a contiguous 2-D view [ne0, ne1].
Tensor expert_slice(const Tensor& exps, int64_t e);

struct ModelWeights {
    Tensor token_embd;   // [n_embd, n_vocab]
    Tensor output_norm;  // [n_embd]
    Tensor output;       // [n_embd, n_vocab]; token_embd when tied
    Tensor rope_freqs;   // [n_rot/2] f32 or empty
    std::vector<LayerWeights> layers;
};

// Binds the weights of a file that ModelConfig::from_file accepted.
ModelWeights bind_weights(const ModelFile& file, const ModelConfig& config);

// A view of a tensor of the file (its bytes stay in the mapping).
Tensor tensor_view(const ModelFile& file, const char* name);

inline bool present(const Tensor& t) { return t.data != nullptr; }

}  // namespace strata
