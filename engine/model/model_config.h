// ModelConfig: the hyperparameters of a model as plain data, read from GGUF metadata and
// checked against the architecture's spec and the file's tensor table (arch_spec.h).
// Everything downstream (planner, KV cache, layer program) reads shapes from here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/op_types.h"

namespace strata {

class ModelFile;

// RopeStyle and Activation are shared with the backends (engine/core/op_types.h).
enum class RopeScaling { None, Linear, Yarn, LongRope };

std::string_view rope_style_name(RopeStyle style);        // "norm", "neox"
std::string_view rope_scaling_name(RopeScaling scaling);  // "none", "linear", "yarn", "longrope"
std::string_view activation_name(Activation activation);  // "silu", "gelu_tanh"

struct RopeConfig {
    RopeStyle style = RopeStyle::Norm;
    int64_t n_rot = 0;               // rotated dims per head (<= head_dim_k); the rest pass through
    double freq_base = 10000.0;      // full-attention layers
    double freq_base_swa = 10000.0;  // sliding-window layers
    RopeScaling scaling = RopeScaling::None;
    double scaling_factor = 1.0;    // context extension; freq_scale = 1/factor. SWA layers never
                                    // use scaling (gemma3: local layers run unscaled).
    int64_t n_ctx_orig = 0;         // YaRN original context (defaults to n_ctx_train)
    bool has_freq_factors = false;  // rope_freqs.weight present (Llama 3.1 style divisors)
    // YaRN (scaling == Yarn): rope.scaling.yarn_* with llama.cpp's defaults (RopeParams).
    double yarn_ext_factor = 1.0;
    double yarn_attn_factor = 1.0;
    double yarn_beta_fast = 32.0;
    double yarn_beta_slow = 1.0;
};

// Special token ids; -1 when the file has none (after the SPM defaults bos 1, eos 2, unk 0).
struct SpecialTokens {
    int64_t bos = -1;
    int64_t eos = -1;
    int64_t unk = -1;
    int64_t pad = -1;
    int64_t sep = -1;
    int64_t eot = -1;
    int64_t eom = -1;
    int64_t mask = -1;
};

// What the tokenizer keys say; the vocabulary itself is read by engine/tokenizer.
struct TokenizerConfig {
    std::string model;  // tokenizer.ggml.model: "llama" (SPM), "gpt2" (BPE), "none", ...
    std::string pre;    // tokenizer.ggml.pre ("" when absent)
    int64_t n_tokens = 0;
    int64_t n_merges = 0;
    bool has_scores = false;
    bool has_token_types = false;
    SpecialTokens special;
    bool add_bos = false;
    bool add_eos = false;
    bool add_space_prefix = false;
    bool has_chat_template = false;
};

// Mixture of experts (all blocks of a MoE model route): the router ffn_gate_inp picks
// n_expert_used of n_expert gated FFNs of width n_ff_exp per token; probabilities are a softmax
// over all experts' logits, the top-k kept, renormalised to sum 1 when norm_topk, then scaled.
struct MoeConfig {
    int64_t n_expert = 0;        // 0: a dense model
    int64_t n_expert_used = 0;   // top-k
    int64_t n_ff_exp = 0;        // width of one expert's FFN
    int64_t n_ff_shexp = 0;      // width of the shared expert; 0: none
    bool shared_gate = false;    // ffn_gate_inp_shexp scales the shared expert by sigmoid(w·x)
    bool norm_topk = true;       // renormalise the kept probabilities
    double weights_scale = 1.0;  // multiplies the kept probabilities
};

struct ModelConfig {
    std::string architecture;  // general.architecture
    std::string name;          // general.name ("" when absent)
    int64_t file_type = -1;    // general.file_type (llama_ftype), -1 when absent

    int64_t n_ctx_train = 0;
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_vocab = 0;
    std::vector<int64_t> n_ff;       // [n_layer]
    std::vector<int64_t> n_head;     // [n_layer]
    std::vector<int64_t> n_head_kv;  // [n_layer]
    int64_t head_dim_k = 0;          // attention.key_length, default n_embd / n_head
    int64_t head_dim_v = 0;          // attention.value_length, default head_dim_k
    double rms_eps = 1e-5;

    RopeConfig rope;
    int64_t sliding_window = 0;  // 0: no sliding-window layers
    std::vector<bool> is_swa;    // [n_layer]; true: attends to the last sliding_window keys

    double attn_logit_softcap = 0.0;   // 0: off
    double final_logit_softcap = 0.0;  // 0: off
    double kq_scale = 0.0;             // multiplies Q·K before softmax
    double embd_scale = 1.0;           // multiplies token embeddings (gemma3: sqrt(n_embd))

    Activation activation = Activation::Silu;
    bool tied_output = false;     // no output.weight: logits use token_embd.weight
    bool has_qk_norm = false;     // attn_q_norm / attn_k_norm per layer
    bool has_qkv_bias = false;    // attn_{q,k,v}.bias per layer
    bool has_post_norms = false;  // post_attention_norm / post_ffw_norm (gemma)
    // The file fuses q/k/v into attn_qkv and gate/up into ffn_up (phi3); the bound weights are
    // row views of them (engine/model/fused_tensors.h), placed with their file tensor.
    bool fused_qkv = false;
    bool fused_gate_up = false;

    MoeConfig moe;
    TokenizerConfig tokenizer;

    bool is_moe() const { return moe.n_expert > 0; }
    int64_t n_embd_q(int il) const { return n_head.at(il) * head_dim_k; }
    int64_t n_embd_k_gqa(int il) const { return n_head_kv.at(il) * head_dim_k; }
    int64_t n_embd_v_gqa(int il) const { return n_head_kv.at(il) * head_dim_v; }
    int64_t n_gqa(int il) const { return n_head.at(il) / n_head_kv.at(il); }

    // Reads and validates a model: known architecture, required keys with the right types,
    // sane hyperparameters, tokenizer arrays of vocabulary length, every required tensor
    // present with the shape the hyperparameters imply, no blocks beyond n_layer.
    // Throws UnsupportedError (unknown architecture) or FormatError naming the key or
    // tensor and the values involved.
    static ModelConfig from_file(const ModelFile& file);
};

}  // namespace strata
