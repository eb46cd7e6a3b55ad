// Architecture "llama" (Llama 2/3, Mistral): pre-norm blocks, NORM-style RoPE over the whole
// head (the converter permutes Q/K for it), SiLU-gated FFN, optional q/k/v biases, optional
// rope_freqs (Llama 3.1 rope scaling), optional output (absent => tied). docs/FORMATS.md §3.3.
// With expert_count > 0 (Mixtral) every block's FFN is a mixture of experts.
#include <cmath>

#include "engine/model/arch_spec.h"
#include "engine/model/gguf_keys.h"
#include "engine/model/key_reader.h"

namespace strata {
namespace {

void read_llama_keys(const KeyReader& keys, ModelConfig& c) {
    // llama reads attention.scale as a kq_scale override.
    c.kq_scale = keys.find_float(keys.key(keys::kAttentionScale))
                     .value_or(1.0 / std::sqrt(static_cast<double>(c.head_dim_k)));
}

void list_llama_tensors(const ModelConfig& c, TensorListBuilder& out) {
    add_token_embd(c, out);
    out.global("rope_freqs.weight", {c.rope.n_rot / 2}, "[n_rot/2]",
               /*required=*/false, /*in_config=*/c.rope.has_freq_factors);
    for (int il = 0; il < c.n_layer; ++il) {
        out.layer(il, "attn_norm.weight", {c.n_embd}, "[n_embd]");
        add_attention(c, il, out);
        add_qkv_bias(c, il, /*required=*/false, out);
        out.layer(il, "ffn_norm.weight", {c.n_embd}, "[n_embd]");
        add_ffn(c, il, out);
    }
    add_output(c, out);
}

}  // namespace

const ArchSpec& llama_arch() {
    static const ArchSpec spec{
        .name = "llama",
        .description = "Llama 2/3, Mistral, Mixtral",
        .rope_style = RopeStyle::Norm,
        .activation = Activation::Silu,
        .qk_norm = false,
        .qkv_bias = false,
        .post_norms = false,
        .q_width_is_n_embd = false,
        .rope_full_head = true,
        .moe = MoeSupport::Optional,  // Mixtral: softmax over the top-k logits
        .moe_norm_topk = true,
        .read_keys = read_llama_keys,
        .list_tensors = list_llama_tensors,
    };
    return spec;
}

}  // namespace strata
