// Per-architecture description: fixed traits (RoPE style, activation, which optional parts
// exist), architecture-specific keys, and the expected tensor list. One ArchSpec per file
// arch_<name>.cpp, registered in arch_registry.cpp by general.architecture.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/tensor_spec.h"

namespace strata {

class KeyReader;

// Whether an architecture's blocks route over experts (model_config.h MoeConfig).
enum class MoeSupport {
    None,      // dense only: expert_count is refused
    Optional,  // MoE iff expert_count > 0 (llama: Mixtral)
    Required,  // always MoE (qwen2moe, qwen3moe)
};

struct ArchSpec {
    std::string_view name;         // general.architecture value
    std::string_view description;  // "Llama 2/3, Mistral"
    RopeStyle rope_style;
    Activation activation;
    bool qk_norm;     // attn_q_norm / attn_k_norm required in every block
    bool qkv_bias;    // attn_{q,k,v}.bias required in every block
    bool post_norms;  // post_attention_norm / post_ffw_norm required in every block
    // attn_q / attn_output are n_embd wide, so n_head * head_dim_k must equal n_embd.
    bool q_width_is_n_embd;
    // rope.dimension_count must equal head_dim_k (llama's loader enforces it).
    bool rope_full_head;
    MoeSupport moe = MoeSupport::None;
    bool moe_norm_topk = true;       // default when the file has no expert_weights_norm
    bool moe_shared_expert = false;  // ffn_{gate,up,down}_shexp and ffn_gate_inp_shexp required
    // One attn_qkv tensor instead of attn_q/k/v; ffn_up holding the gate and up rows instead of
    // ffn_gate + ffn_up (phi3). ModelConfig copies them; fused_tensors.h maps the views.
    bool fused_qkv = false;
    bool fused_gate_up = false;
    // Reads the architecture's own keys and sets derived values (kq_scale, embd_scale,
    // sliding-window layout) after the generic keys are in `config`.
    void (*read_keys)(const KeyReader& keys, ModelConfig& config);
    // Appends the expected tensors for `config` in file order.
    void (*list_tensors)(const ModelConfig& config, TensorListBuilder& out);
};

// nullptr when unknown.
const ArchSpec* find_arch(std::string_view name);
// Throws UnsupportedError naming the architecture and the supported ones.
const ArchSpec& arch_spec(std::string_view name);
// Sorted names: "gemma2", "gemma3", "llama", "phi3", "qwen2", "qwen2moe", "qwen3", "qwen3moe".
std::vector<std::string_view> supported_architectures();

// Defined in arch_<name>.cpp.
const ArchSpec& llama_arch();
const ArchSpec& qwen2_arch();
const ArchSpec& qwen3_arch();
const ArchSpec& gemma2_arch();
const ArchSpec& gemma3_arch();
const ArchSpec& phi3_arch();
const ArchSpec& qwen2moe_arch();
const ArchSpec& qwen3moe_arch();

// A mixture-of-experts variant of a dense architecture (arch_registry.cpp): `dense` with every
// block's FFN routed over experts (MoeSupport::Required), its top-k probabilities renormalised
// or not by default, with or without a shared expert.
struct MoeVariant {
    std::string_view name;
    std::string_view description;
    bool norm_topk;
    bool shared_expert;
};
ArchSpec moe_variant(const ArchSpec& dense, const MoeVariant& moe);

// read_keys of the architectures whose attention scale is 1/sqrt(head_dim_k) with no key of
// their own (qwen2, qwen3; arch_registry.cpp).
void read_head_dim_kq_scale(const KeyReader& keys, ModelConfig& config);

// Building blocks shared by the architecture files (tensor_spec.cpp).
// token_embd.weight [n_embd, n_vocab]
void add_token_embd(const ModelConfig& c, TensorListBuilder& out);
// output_norm.weight [n_embd], output.weight [n_embd, n_vocab] (optional: absent => tied)
void add_output(const ModelConfig& c, TensorListBuilder& out);
// attn_q/k/v/output weights of block il, shapes from n_head, n_head_kv and head dims.
void add_attention(const ModelConfig& c, int il, TensorListBuilder& out);
// ffn_gate/up/down weights of block il.
void add_gated_ffn(const ModelConfig& c, int il, TensorListBuilder& out);
// The router, the 3-D expert tensors and the shared expert (when c.moe has one) of block il.
void add_moe_ffn(const ModelConfig& c, int il, TensorListBuilder& out);
// add_moe_ffn for a MoE config, else add_gated_ffn.
void add_ffn(const ModelConfig& c, int il, TensorListBuilder& out);
// attn_{q,k,v}.bias of block il; `required` false makes them optional (present iff
// c.has_qkv_bias).
void add_qkv_bias(const ModelConfig& c, int il, bool required, TensorListBuilder& out);
// attn_q_norm / attn_k_norm [head_dim_k] of block il.
void add_qk_norm(const ModelConfig& c, int il, TensorListBuilder& out);

}  // namespace strata
