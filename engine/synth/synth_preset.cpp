// The preset table (see synth_preset.h). Shapes are those of the published model configs;
// vocabulary sizes are those of the GGUF conversions (Gemma 3 262144, Qwen2 152064 padded).
#include "engine/synth/synth_preset.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/model/config_checks.h"

namespace strata {
namespace {

struct Shape {
    std::string_view arch;
    std::string_view name;
    int64_t n_ctx;
    int64_t n_embd;
    int64_t n_layer;
    int64_t n_head;
    int64_t n_head_kv;
    int64_t head_dim;
    int64_t n_ff;
    int64_t n_vocab;
    double rms_eps;
    double rope_base;
    bool tied = false;
    int64_t sliding_window = 0;  // gemma3: every 6th layer global, the rest local; gemma2: every other;
                                 // phi3: every layer local
    int64_t n_expert = 0;        // MoE: experts per layer, used per token, width of one
    int64_t n_expert_used = 0;
    int64_t n_ff_exp = 0;
};

ModelConfig from_shape(const Shape& s) {
    ModelConfig c;
    c.architecture = s.arch;
    c.name = s.name;
    c.n_ctx_train = s.n_ctx;
    c.n_embd = s.n_embd;
    c.n_layer = s.n_layer;
    c.n_vocab = s.n_vocab;
    c.n_ff.assign(s.n_layer, s.n_ff);
    c.n_head.assign(s.n_layer, s.n_head);
    c.n_head_kv.assign(s.n_layer, s.n_head_kv);
    c.head_dim_k = c.head_dim_v = s.head_dim;
    c.rms_eps = s.rms_eps;
    c.rope.n_rot = s.head_dim;
    c.rope.freq_base = s.rope_base;
    c.rope.n_ctx_orig = s.n_ctx;
    c.rope.style = s.arch == "llama" ? RopeStyle::Norm : RopeStyle::Neox;
    c.tied_output = s.tied;
    c.sliding_window = s.sliding_window;
    c.is_swa.assign(s.n_layer, false);
    c.kq_scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
    if (s.arch == "qwen2") c.has_qkv_bias = true;
    if (s.arch == "qwen3" || s.arch == "qwen3moe" || s.arch == "gemma3") c.has_qk_norm = true;
    c.moe.n_expert = s.n_expert;
    c.moe.n_expert_used = s.n_expert_used;
    c.moe.n_ff_exp = s.n_ff_exp;
    if (s.arch == "gemma3" || s.arch == "gemma2") {
        c.has_post_norms = true;
        c.activation = Activation::GeluTanh;
        c.embd_scale = std::sqrt(static_cast<double>(s.n_embd));
    }
    if (s.arch == "phi3") {  // q/k/v in attn_qkv, gate/up in ffn_up; one rotary base (arch_phi3.cpp)
        c.fused_qkv = c.fused_gate_up = true;
        c.rope.freq_base_swa = s.rope_base;
    }
    if (s.arch == "gemma2") {  // the published configs' caps
        c.attn_logit_softcap = 50.0;
        c.final_logit_softcap = 30.0;
    }
    return c;
}

// clang-format off
const std::vector<SynthPreset> kPresets = {
    {"tiny", "llama, 4 layers, n_embd 256, GQA 4/2, vocab 512 (tests)", VocabStyle::Llama2Spm,
     [] { return from_shape({"llama", "Tiny Llama", 2048, 256, 4, 4, 2, 64, 768, 512, 1e-5, 10000.0}); }},
    {"tiny-qwen2", "qwen2, 4 layers, n_embd 256, q/k/v biases, vocab 512 (tests)", VocabStyle::Qwen2Bpe,
     [] { return from_shape({"qwen2", "Tiny Qwen2", 4096, 256, 4, 4, 2, 64, 768, 512, 1e-6, 1e6}); }},
    {"tiny-qwen3", "qwen3, 4 layers, n_embd 256, head_dim 128, q/k norms, vocab 512 (tests)", VocabStyle::Qwen3Bpe,
     [] { return from_shape({"qwen3", "Tiny Qwen3", 4096, 256, 4, 4, 2, 128, 768, 512, 1e-6, 1e6}); }},
    {"tiny-gemma3", "gemma3, 6 layers, n_embd 384, window 64, tied, vocab 512 (tests)", VocabStyle::Gemma3Spm,
     [] { return from_shape({"gemma3", "Tiny Gemma 3", 4096, 384, 6, 4, 1, 128, 768, 512, 1e-6, 1e6, true, 64}); }},
    {"tiny-phi3", "phi3, 4 layers, n_embd 256, GQA 4/2, fused qkv and gate/up, window 64, vocab 512 (tests)",
     VocabStyle::Llama2Spm,
     [] { return from_shape({"phi3", "Tiny Phi 3", 4096, 256, 4, 4, 2, 64, 768, 512, 1e-5, 10000.0, false, 64}); }},
    {"tiny-qwen3moe", "qwen3moe, 4 layers, n_embd 256, 8 experts of 256, top-2, vocab 512 (tests)", VocabStyle::Qwen3Bpe,
     [] { return from_shape({"qwen3moe", "Tiny Qwen3 MoE", 4096, 256, 4, 4, 2, 64, 512, 512, 1e-6, 1e6, false, 0, 8, 2, 256}); }},
    {"tiny-mixtral", "llama with experts, 4 layers, n_embd 256, 4 experts of 512, top-2, vocab 512 (tests)",
     VocabStyle::Llama2Spm,
     [] { return from_shape({"llama", "Tiny Mixtral", 4096, 256, 4, 4, 2, 64, 512, 512, 1e-5, 1e6, false, 0, 4, 2, 512}); }},
    {"gemma3-270m", "Gemma-3-270M: 18 layers, n_embd 640, 4/1 heads of 256, vocab 262144", VocabStyle::Gemma3Spm,
     [] { return from_shape({"gemma3", "Gemma 3 270m", 32768, 640, 18, 4, 1, 256, 2048, 262144, 1e-6, 1e6, true, 512}); }},
    {"gemma3-1b", "Gemma-3-1B: 26 layers, n_embd 1152, 4/1 heads of 256, vocab 262144", VocabStyle::Gemma3Spm,
     [] { return from_shape({"gemma3", "Gemma 3 1b", 32768, 1152, 26, 4, 1, 256, 6912, 262144, 1e-6, 1e6, true, 512}); }},
    {"gemma2-2b", "Gemma-2-2B: 26 layers, n_embd 2304, GQA 8/4 heads of 256, window 4096, soft-capping, vocab 256000",
     VocabStyle::Gemma3Spm,
     [] { return from_shape({"gemma2", "Gemma 2 2b", 8192, 2304, 26, 8, 4, 256, 9216, 256000, 1e-6, 10000.0, true, 4096}); }},
    {"mistral-nemo-12b", "Mistral-Nemo-12B: 40 layers, n_embd 5120, GQA 32/8 heads of 128, n_ff 14336, vocab 131072",
     VocabStyle::Llama3Bpe,
     [] { return from_shape({"llama", "Mistral Nemo 12B", 131072, 5120, 40, 32, 8, 128, 14336, 131072, 1e-5, 1e6}); }},
    {"phi3-mini", "Phi-3-mini-4k (3.8B): 32 layers, n_embd 3072, 32 heads of 96, n_ff 8192, window 2047, vocab 32064",
     VocabStyle::Llama2Spm,
     [] { return from_shape({"phi3", "Phi 3 mini 4k", 4096, 3072, 32, 32, 32, 96, 8192, 32064, 1e-5, 10000.0, false, 2047}); }},
    {"llama2-7b", "Llama-2-7B: 32 layers, n_embd 4096, 32 heads, n_ff 11008, vocab 32000", VocabStyle::Llama2Spm,
     [] { return from_shape({"llama", "Llama 2 7B", 4096, 4096, 32, 32, 32, 128, 11008, 32000, 1e-5, 10000.0}); }},
    {"llama2-13b", "Llama-2-13B: 40 layers, n_embd 5120, 40 heads, n_ff 13824, vocab 32000", VocabStyle::Llama2Spm,
     [] { return from_shape({"llama", "Llama 2 13B", 4096, 5120, 40, 40, 40, 128, 13824, 32000, 1e-5, 10000.0}); }},
    {"llama2-70b", "Llama-2-70B: 80 layers, n_embd 8192, GQA 64/8, n_ff 28672, vocab 32000", VocabStyle::Llama2Spm,
     [] { return from_shape({"llama", "Llama 2 70B", 4096, 8192, 80, 64, 8, 128, 28672, 32000, 1e-5, 10000.0}); }},
    {"llama3-8b", "Llama-3-8B: 32 layers, n_embd 4096, GQA 32/8, n_ff 14336, vocab 128256", VocabStyle::Llama3Bpe,
     [] { return from_shape({"llama", "Llama 3 8B", 8192, 4096, 32, 32, 8, 128, 14336, 128256, 1e-5, 500000.0}); }},
    {"qwen2-7b", "Qwen2-7B: 28 layers, n_embd 3584, GQA 28/4, n_ff 18944, vocab 152064", VocabStyle::Qwen2Bpe,
     [] { return from_shape({"qwen2", "Qwen2 7B", 32768, 3584, 28, 28, 4, 128, 18944, 152064, 1e-6, 1e6}); }},
    {"qwen2.5-0.5b", "Qwen2.5-0.5B: 24 layers, n_embd 896, GQA 14/2 heads of 64, n_ff 4864, vocab 151936",
     VocabStyle::Qwen2Bpe,
     [] { return from_shape({"qwen2", "Qwen2.5 0.5B", 32768, 896, 24, 14, 2, 64, 4864, 151936, 1e-6, 1e6}); }},
    {"qwen3-30b-a3b", "Qwen3-30B-A3B: 48 layers, n_embd 2048, GQA 32/4, 128 experts of 768, top-8, vocab 151936",
     VocabStyle::Qwen3Bpe,
     [] { return from_shape({"qwen3moe", "Qwen3 30B A3B", 40960, 2048, 48, 32, 4, 128, 6144, 151936, 1e-6, 1e6, false, 0,
                             128, 8, 768}); }},
    {"mixtral-8x7b", "Mixtral-8x7B: 32 layers, n_embd 4096, GQA 32/8, 8 experts of 14336, top-2, vocab 32000",
     VocabStyle::Llama2Spm,
     [] { return from_shape({"llama", "Mixtral 8x7B", 32768, 4096, 32, 32, 8, 128, 14336, 32000, 1e-5, 1e6, false, 0,
                             8, 2, 14336}); }},
    {"qwen3-8b", "Qwen3-8B: 36 layers, n_embd 4096, GQA 32/8, n_ff 12288, vocab 151936", VocabStyle::Qwen3Bpe,
     [] { return from_shape({"qwen3", "Qwen3 8B", 40960, 4096, 36, 32, 8, 128, 12288, 151936, 1e-6, 1e6}); }},
};
// clang-format on

constexpr int64_t kGemma3SwaPeriod = 6;  // gemma2: 2 (every other layer, from layer 0)

}  // namespace

const std::vector<SynthPreset>& synth_presets() {
    return kPresets;
}

const SynthPreset& find_synth_preset(std::string_view name) {
    for (const SynthPreset& p : kPresets) {
        if (p.name == name) return p;
    }
    std::string list;
    for (const SynthPreset& p : kPresets)
        list += (list.empty() ? "" : ", ") + std::string(p.name);
    throw ArgumentError(cat("unknown preset '", name, "' (known: ", list, ")"));
}

ModelConfig synth_config(const SynthPreset& preset, int64_t n_layer, int64_t n_vocab) {
    ModelConfig c = preset.make_config();
    if (n_layer != 0) {
        if (n_layer < 1 || n_layer > kMaxLayers) {
            throw ArgumentError(cat("--layers ", n_layer, " is out of range 1..", kMaxLayers));
        }
        c.n_layer = n_layer;
        c.n_ff.assign(n_layer, c.n_ff.at(0));
        c.n_head.assign(n_layer, c.n_head.at(0));
        c.n_head_kv.assign(n_layer, c.n_head_kv.at(0));
    }
    if (n_vocab != 0) {
        int64_t lo = min_vocab_size(preset.vocab);
        if (n_vocab < lo || n_vocab > kMaxVocab) {
            throw ArgumentError(cat("--vocab ", n_vocab, " is out of range ", lo, "..", kMaxVocab,
                                    " for preset ", preset.name));
        }
        c.n_vocab = n_vocab;
    }
    c.is_swa.assign(c.n_layer, false);
    if (c.sliding_window > 0) {
        const int64_t period = c.architecture == "gemma2" ? 2 : kGemma3SwaPeriod;
        for (int64_t il = 0; il < c.n_layer; ++il) {
            c.is_swa[il] = c.architecture == "phi3" || (il % period) < period - 1;  // phi3: every layer
        }
    }
    return c;
}

}  // namespace strata
