// Architecture "gemma3": NEOX RoPE with a separate base for sliding-window layers, GELU-tanh
// gated FFN, per-head q/k RMSNorm, post-attention and post-FFN norms, embeddings scaled by
// sqrt(n_embd), 5 local layers to 1 global by default, output usually tied. docs/FORMATS.md §3.2.
#include <cmath>

#include "engine/core/error.h"
#include "engine/model/arch_spec.h"
#include "engine/model/gguf_keys.h"
#include "engine/model/key_reader.h"

namespace strata {
namespace {

constexpr int64_t kDefaultSwaPeriod = 6;  // layers 5, 11, 17, ... are global
constexpr int64_t kGemma3_27bLayers = 62;

void read_gemma3_keys(const KeyReader& keys, ModelConfig& c) {
    c.embd_scale = std::sqrt(static_cast<double>(c.n_embd));
    // The 27B model scales queries by 1/sqrt(n_embd / n_head) (HF query_pre_attn_scalar 168);
    // every other size by 1/sqrt(head_dim). attention.scale is not read for gemma3.
    double scalar = c.n_layer == kGemma3_27bLayers
                        ? static_cast<double>(c.n_embd) / static_cast<double>(c.n_head.at(0))
                        : static_cast<double>(c.head_dim_k);
    c.kq_scale = 1.0 / std::sqrt(scalar);

    c.is_swa.assign(static_cast<size_t>(c.n_layer), false);
    if (c.sliding_window <= 0) return;
    std::string pattern_key = keys.key(keys::kSlidingWindowPattern);
    if (auto per_layer = keys.find_per_layer_bools(pattern_key, c.n_layer)) {
        c.is_swa = *per_layer;
        return;
    }
    int64_t period = keys.find_int(pattern_key).value_or(kDefaultSwaPeriod);
    if (period < 1) keys.fail(cat("key '", pattern_key, "' is ", period, ", expected >= 1"));
    for (int64_t il = 0; il < c.n_layer; ++il)
        c.is_swa[il] = (il % period) < (period - 1);
}

void list_gemma3_tensors(const ModelConfig& c, TensorListBuilder& out) {
    add_token_embd(c, out);
    for (int il = 0; il < c.n_layer; ++il) {
        out.layer(il, "attn_norm.weight", {c.n_embd}, "[n_embd]");
        add_attention(c, il, out);
        add_qk_norm(c, il, out);
        out.layer(il, "post_attention_norm.weight", {c.n_embd},
                  "[n_embd]");
        out.layer(il, "ffn_norm.weight", {c.n_embd}, "[n_embd]");
        add_gated_ffn(c, il, out);
        out.layer(il, "post_ffw_norm.weight", {c.n_embd}, "[n_embd]");
    }
    add_output(c, out);
}

}  // namespace

const ArchSpec& gemma3_arch() {
    static const ArchSpec spec{
        .name = "gemma3",
        .description = "Gemma 3 (text)",
        .rope_style = RopeStyle::Neox,
        .activation = Activation::GeluTanh,
        .qk_norm = true,
        .qkv_bias = false,
        .post_norms = true,
        .q_width_is_n_embd = false,
        .rope_full_head = false,
        .read_keys = read_gemma3_keys,
        .list_tensors = list_gemma3_tensors,
    };
    return spec;
}

}  // namespace strata
