// Architecture "phi3" (Phi-3 mini/medium 4k, Phi-4): pre-norm blocks as llama's, but q/k/v fused
// in one attn_qkv tensor and the FFN's gate and up rows fused in ffn_up (gate first, SiLU-gated as
// ggml_swiglu / HF Phi3MLP's chunk(2)), NEOX RoPE (the converter does not permute Q/K; HF
// rotate_half), rope.dimension_count may rotate part of the head, optional output (absent =>
// tied). attention.sliding_window > 0 (Phi-3 4k: 2047) masks every layer to that many keys, as
// transformers' Phi3 does; llama.cpp ignores the key since its PR 13676. LongRoPE files (128k,
// Phi-3.5) are refused in model_config.cpp. Bound weights are row views (fused_tensors.h).
#include <cmath>

#include "engine/model/arch_spec.h"

namespace strata {
namespace {

void read_phi3_keys(const KeyReader&, ModelConfig& c) {
    c.kq_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim_k));
    c.rope.freq_base_swa = c.rope.freq_base;  // one base: every layer is windowed or none is
    c.is_swa.assign(static_cast<size_t>(c.n_layer), c.sliding_window > 0);
}

void list_phi3_tensors(const ModelConfig& c, TensorListBuilder& out) {
    add_token_embd(c, out);
    for (int il = 0; il < c.n_layer; ++il) {
        const int64_t n_ff = c.n_ff.at(il);
        out.layer(il, "attn_norm.weight", {c.n_embd}, "[n_embd]");
        out.layer(il, "attn_qkv.weight",
                  {c.n_embd, c.n_embd_q(il) + c.n_embd_k_gqa(il) + c.n_embd_v_gqa(il)},
                  "[n_embd, n_head*head_dim_k + n_head_kv*(head_dim_k + head_dim_v)]");
        out.layer(il, "attn_output.weight", {c.n_head.at(il) * c.head_dim_v, c.n_embd},
                  "[n_head*head_dim_v, n_embd]");
        out.layer(il, "ffn_norm.weight", {c.n_embd}, "[n_embd]");
        out.layer(il, "ffn_up.weight", {c.n_embd, 2 * n_ff}, "[n_embd, 2*n_ff] (gate rows, then up)");
        out.layer(il, "ffn_down.weight", {n_ff, c.n_embd}, "[n_ff, n_embd]");
    }
    add_output(c, out);
}

}  // namespace

const ArchSpec& phi3_arch() {
    static const ArchSpec spec{
        .name = "phi3",
        .description = "Phi-3 (4k context), Phi-4",
        .rope_style = RopeStyle::Neox,
        .activation = Activation::Silu,
        .qk_norm = false,
        .qkv_bias = false,
        .post_norms = false,
        .q_width_is_n_embd = true,  // llama.cpp: attn_output [n_embd, n_embd]
        .rope_full_head = false,
        .fused_qkv = true,
        .fused_gate_up = true,
        .read_keys = read_phi3_keys,
        .list_tensors = list_phi3_tensors,
    };
    return spec;
}

}  // namespace strata
