// Architecture "qwen3": NEOX RoPE, no biases, per-head RMSNorm of Q and K before RoPE
// (attn_q_norm / attn_k_norm, plain weights), head_dim from attention.key_length (may differ
// from n_embd / n_head). Optional output (absent => tied). gguf-facts §3.4.
#include <cmath>

#include "engine/model/arch_spec.h"

namespace strata {
namespace {

void read_qwen3_keys(const KeyReader&, ModelConfig& c) {
    c.kq_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim_k));
}

void list_qwen3_tensors(const ModelConfig& c, TensorListBuilder& out) {
    add_token_embd(c, out);
    for (int il = 0; il < c.n_layer; ++il) {
        out.layer(il, "attn_norm.weight", TensorRole::AttnNorm, {c.n_embd}, "[n_embd]");
        add_attention(c, il, out);
        add_qk_norm(c, il, out);
        out.layer(il, "ffn_norm.weight", TensorRole::FfnNorm, {c.n_embd}, "[n_embd]");
        add_gated_ffn(c, il, out);
    }
    add_output(c, out);
}

}  // namespace

const ArchSpec& qwen3_arch() {
    static const ArchSpec spec{
        .name = "qwen3",
        .description = "Qwen3 (dense)",
        .rope_style = RopeStyle::Neox,
        .activation = Activation::Silu,
        .qk_norm = true,
        .qkv_bias = false,
        .post_norms = false,
        .q_width_is_n_embd = false,
        .rope_full_head = false,
        .read_keys = read_qwen3_keys,
        .list_tensors = list_qwen3_tensors,
    };
    return spec;
}

}  // namespace strata
