// Architecture "qwen2": like llama but NEOX RoPE, required q/k/v biases, and q/o projections
// n_embd wide (head_dim = n_embd / n_head). Optional output (absent => tied). docs/FORMATS.md §3.4.
// "qwen2moe" (Qwen1.5-MoE): the same blocks with a mixture-of-experts FFN whose top-k softmax
// probabilities are used as they are, plus a shared expert scaled by sigmoid(ffn_gate_inp_shexp·x).
#include <cmath>

#include "engine/model/arch_spec.h"

namespace strata {
namespace {

void read_qwen2_keys(const KeyReader&, ModelConfig& c) {
    c.kq_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim_k));
}

void list_qwen2_tensors(const ModelConfig& c, TensorListBuilder& out) {
    add_token_embd(c, out);
    for (int il = 0; il < c.n_layer; ++il) {
        out.layer(il, "attn_norm.weight", TensorRole::AttnNorm, {c.n_embd}, "[n_embd]");
        add_attention(c, il, out);
        add_qkv_bias(c, il, /*required=*/true, out);
        out.layer(il, "ffn_norm.weight", TensorRole::FfnNorm, {c.n_embd}, "[n_embd]");
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
        .read_keys = read_qwen2_keys,
        .list_tensors = list_qwen2_tensors,
    };
    return spec;
}

// The dense spec with every block's FFN a mixture of experts.
const ArchSpec& qwen2moe_arch() {
    static const ArchSpec spec = [] {
        ArchSpec s = qwen2_arch();
        s.name = "qwen2moe";
        s.description = "Qwen1.5-MoE, Qwen2-MoE";
        s.moe = MoeSupport::Required;
        s.moe_norm_topk = false;
        s.moe_shared_expert = true;
        return s;
    }();
    return spec;
}

}  // namespace strata
