// Architecture "qwen3": NEOX RoPE, no biases, per-head RMSNorm of Q and K before RoPE
// (attn_q_norm / attn_k_norm, plain weights), head_dim from attention.key_length (may differ
// from n_embd / n_head). Optional output (absent => tied). docs/FORMATS.md §3.4.
// "qwen3moe" (Qwen3-30B-A3B): the same blocks with a mixture-of-experts FFN: softmax router, top-k
// renormalised (HF norm_topk_prob; llama.cpp always renormalises), no shared expert.
#include "engine/model/arch_spec.h"

namespace strata {
namespace {

void list_qwen3_tensors(const ModelConfig& c, TensorListBuilder& out) {
    add_token_embd(c, out);
    for (int il = 0; il < c.n_layer; ++il) {
        out.layer(il, "attn_norm.weight", {c.n_embd}, "[n_embd]");
        add_attention(c, il, out);
        add_qk_norm(c, il, out);
        out.layer(il, "ffn_norm.weight", {c.n_embd}, "[n_embd]");
        add_ffn(c, il, out);
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
        .read_keys = read_head_dim_kq_scale,
        .list_tensors = list_qwen3_tensors,
    };
    return spec;
}

// The dense spec with every block's FFN a mixture of experts.
const ArchSpec& qwen3moe_arch() {
    static const ArchSpec spec = moe_variant(qwen3_arch(), {.name = "qwen3moe",
                                                            .description = "Qwen3 MoE (Qwen3-30B-A3B)",
                                                            .norm_topk = true,
                                                            .shared_expert = false});
    return spec;
}

}  // namespace strata
