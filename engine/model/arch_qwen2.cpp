// Architecture "qwen2": like llama but NEOX RoPE, required q/k/v biases, and q/o projections
// n_embd wide (head_dim = n_embd / n_head). Optional output (absent => tied). docs/FORMATS.md §3.4.
// "qwen2moe" (Qwen1.5-MoE): the same blocks with a mixture-of-experts FFN whose top-k softmax
// probabilities are used as they are, plus a shared expert scaled by sigmoid(ffn_gate_inp_shexp·x).
#include "engine/model/arch_spec.h"

namespace strata {
namespace {

void list_qwen2_tensors(const ModelConfig& c, TensorListBuilder& out) {
    add_token_embd(c, out);
    for (int il = 0; il < c.n_layer; ++il) {
        out.layer(il, "attn_norm.weight", {c.n_embd}, "[n_embd]");
        add_attention(c, il, out);
        add_qkv_bias(c, il, /*required=*/true, out);
        out.layer(il, "ffn_norm.weight", {c.n_embd}, "[n_embd]");
        add_ffn(c, il, out);
    }
    add_output(c, out);
}

}  // namespace

const ArchSpec& qwen2_arch() {
    static const ArchSpec spec{
        .name = "qwen2",
        .description = "Qwen2, Qwen2.5",
        .rope_style = RopeStyle::Neox,
        .activation = Activation::Silu,
        .qk_norm = false,
        .qkv_bias = true,
        .post_norms = false,
        .q_width_is_n_embd = true,
        .rope_full_head = false,
        .read_keys = read_head_dim_kq_scale,
        .list_tensors = list_qwen2_tensors,
    };
    return spec;
}

// The dense spec with every block's FFN a mixture of experts.
const ArchSpec& qwen2moe_arch() {
    static const ArchSpec spec = moe_variant(qwen2_arch(), {.name = "qwen2moe",
                                                            .description = "Qwen1.5-MoE, Qwen2-MoE",
                                                            .norm_topk = false,
                                                            .shared_expert = true});
    return spec;
}

}  // namespace strata
