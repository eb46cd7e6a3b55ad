// Architecture "gemma2": Gemma 3's blocks without the q/k norms. NEOX RoPE with one base for
// every layer, GELU-tanh gated FFN, post-attention and post-FFN norms, embeddings scaled by
// sqrt(n_embd), attention-logit soft-capping c·tanh(s/c) (default 50) and final-logit
// soft-capping (default 30), sliding window (default 4096) on every other layer starting with
// layer 0, output tied. The defaults are llama.cpp's for files without the keys.
#include <cmath>

#include "engine/model/arch_spec.h"
#include "engine/model/gguf_keys.h"
#include "engine/model/key_reader.h"

namespace strata {
namespace {

constexpr int64_t kGemma2_27bLayers = 46;
constexpr int64_t kDefaultWindow = 4096;
constexpr double kDefaultAttnSoftcap = 50.0;
constexpr double kDefaultFinalSoftcap = 30.0;

void read_gemma2_keys(const KeyReader& keys, ModelConfig& c) {
    c.embd_scale = std::sqrt(static_cast<double>(c.n_embd));
    // 27B scales queries by 1/sqrt(n_embd / n_head) (HF query_pre_attn_scalar 144); the other
    // sizes by 1/sqrt(head_dim) (256 = head_dim there).
    double scalar = c.n_layer == kGemma2_27bLayers
                        ? static_cast<double>(c.n_embd) / static_cast<double>(c.n_head.at(0))
                        : static_cast<double>(c.head_dim_k);
    c.kq_scale = 1.0 / std::sqrt(scalar);
    c.attn_logit_softcap = keys.find_float(keys.key(keys::kAttnLogitSoftcap)).value_or(kDefaultAttnSoftcap);
    c.final_logit_softcap = keys.find_float(keys.key(keys::kFinalLogitSoftcap)).value_or(kDefaultFinalSoftcap);
    // One rotary base for local and global layers.
    c.rope.freq_base_swa = keys.find_float(keys.key(keys::kRopeFreqBaseSwa)).value_or(c.rope.freq_base);
    c.sliding_window = keys.find_int(keys.key(keys::kSlidingWindow)).value_or(kDefaultWindow);
    c.is_swa.assign(static_cast<size_t>(c.n_layer), false);
    for (int64_t il = 0; il < c.n_layer; il += 2) c.is_swa[static_cast<size_t>(il)] = c.sliding_window > 0;
}

void list_gemma2_tensors(const ModelConfig& c, TensorListBuilder& out) {
    add_token_embd(c, out);
    for (int il = 0; il < c.n_layer; ++il) {
        out.layer(il, "attn_norm.weight", {c.n_embd}, "[n_embd]");
        add_attention(c, il, out);
        out.layer(il, "post_attention_norm.weight", {c.n_embd}, "[n_embd]");
        out.layer(il, "ffn_norm.weight", {c.n_embd}, "[n_embd]");
        add_gated_ffn(c, il, out);
        out.layer(il, "post_ffw_norm.weight", {c.n_embd}, "[n_embd]");
    }
    add_output(c, out);
}

}  // namespace

const ArchSpec& gemma2_arch() {
    static const ArchSpec spec{
        .name = "gemma2",
        .description = "Gemma 2",
        .rope_style = RopeStyle::Neox,
        .activation = Activation::GeluTanh,
        .qk_norm = false,
        .qkv_bias = false,
        .post_norms = true,
        .q_width_is_n_embd = false,
        .rope_full_head = false,
        .read_keys = read_gemma2_keys,
        .list_tensors = list_gemma2_tensors,
    };
    return spec;
}

}  // namespace strata
