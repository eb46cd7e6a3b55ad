// llama.cpp's engine flags mapped onto Strata's settings (llama_options.h).
#include "tools/llama_options.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/error.h"
#include "offload/placement_rules.h"
#include "offload/tier.h"
#include "tools/numbers.h"

namespace strata::cli {

int parse_gpu_layers(const std::string& text) {
    if (text == "auto" || text == "all") return -1;
    return static_cast<int>(parse_int(text, "-ngl", -1, INT32_MAX));
}

std::string parse_flash_attn(const std::string& text) {
    if (text.empty() || text == "on" || text == "1" || text == "true" || text == "enabled") return "on";
    if (text == "off" || text == "0" || text == "false" || text == "disabled") return "off";
    if (text == "auto") return "auto";
    throw ArgumentError(cat("-fa: '", text, "' is not on, off or auto"));
}

namespace {

void add_rope_options(CLI::App& cmd, LlamaFlags& f) {
    cmd.add_option("--rope-scaling", f.rope_scaling, "RoPE scaling over the file's: none, linear or yarn");
    cmd.add_option("--rope-scale", f.rope_scale, "RoPE context extension factor N (linear unless --rope-scaling says)");
    cmd.add_option("--rope-freq-base", f.rope_freq_base, "RoPE base frequency over the file's");
    cmd.add_option("--rope-freq-scale", f.rope_freq_scale, "RoPE frequency scale F (= 1/--rope-scale)");
    cmd.add_option("--yarn-orig-ctx", f.yarn_orig_ctx, "YaRN: the model's original context");
    cmd.add_option("--yarn-ext-factor", f.yarn_ext_factor, "YaRN: extrapolation mix factor (negative: 1)");
    cmd.add_option("--yarn-attn-factor", f.yarn_attn_factor, "YaRN: attention magnitude factor");
    cmd.add_option("--yarn-beta-fast", f.yarn_beta_fast, "YaRN: low correction dim");
    cmd.add_option("--yarn-beta-slow", f.yarn_beta_slow, "YaRN: high correction dim");
}

RopeOverrides parse_rope_options(const LlamaFlags& f) {
    RopeOverrides o;
    const auto real = [](const std::string& text, const char* flag) -> std::optional<double> {
        if (text.empty()) return std::nullopt;
        return parse_real(text, flag, -1e300, 1e300);
    };
    if (!f.rope_scaling.empty()) o.scaling = parse_rope_scaling(f.rope_scaling);
    o.scale = real(f.rope_scale, "--rope-scale");
    o.freq_scale = real(f.rope_freq_scale, "--rope-freq-scale");
    o.freq_base = real(f.rope_freq_base, "--rope-freq-base");
    if (!f.yarn_orig_ctx.empty()) o.yarn_orig_ctx = parse_int(f.yarn_orig_ctx, "--yarn-orig-ctx", 1, int64_t{1} << 27);
    o.yarn_ext_factor = real(f.yarn_ext_factor, "--yarn-ext-factor");
    o.yarn_attn_factor = real(f.yarn_attn_factor, "--yarn-attn-factor");
    o.yarn_beta_fast = real(f.yarn_beta_fast, "--yarn-beta-fast");
    o.yarn_beta_slow = real(f.yarn_beta_slow, "--yarn-beta-slow");
    return o;
}

}  // namespace

void add_llama_options(CLI::App& cmd, LlamaFlags& f) {
    cmd.add_option("--n-gpu-layers,--gpu-layers", f.gpu_layers,
                   "-ngl N: at most the first N layers on the GPU (N > layers: the output matrix too);"
                   " the placement fills the rest as usual (auto, all: no limit)");
    cmd.add_option("--override-tensor", f.override_tensor,
                   "-ot REGEX=DEVICE[,...]: tensors whose names match go to DEVICE: CPU (off the GPU) or"
                   " GPU/CUDA0 (on it); repeatable, the first match wins")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd.add_option("--flash-attn", f.flash_attn,
                   "-fa [on|off|auto]: accepted; attention here is always one fused pass over the KV cache")
        ->expected(0, 1)->capture_default_str();
    cmd.add_option("--ctv,--cache-type-v", f.kv_type_v, "-ctv: V cache type; Strata keeps K and V in one type (= -ctk)");
    cmd.add_option("--ubatch-size", f.n_ubatch, "-ub N: prompt tokens per forward pass (with -b: the smaller)")
        ->check(int_in(1, int64_t{1} << 24));
    cmd.add_flag("--no-mmap", f.no_mmap, "copy the weights kept in RAM out of the file mapping");
    cmd.add_flag("--mlock", f.mlock, "lock the weights kept in RAM in memory (see `ulimit -l`)");
    cmd.add_flag("--jinja", f.jinja, "use the model's own chat template (accepted; chat and serve)");
    cmd.add_flag("--swa-full", f.swa_full,
                 "sliding-window layers keep every position (more KV memory) instead of a ring of window + batch");
    add_rope_options(cmd, f);
}


void check_model_source(const LlamaFlags&, const std::string& model) {
    if (model.empty()) throw CLI::RequiredError("-m FILE (the GGUF model)");
}

void apply_llama_options(const LlamaFlags& f, const std::string& kv_type, RuntimeOptions& r) {
    if (!f.gpu_layers.empty()) r.rules.gpu_layers = parse_gpu_layers(f.gpu_layers);
    for (const std::string& text : f.override_tensor) {
        for (TensorRule& rule : parse_tensor_rules(text)) r.rules.tensors.push_back(std::move(rule));
    }
    parse_flash_attn(f.flash_attn);
    if (!f.kv_type_v.empty() && f.kv_type_v != kv_type) {
        throw ArgumentError(cat("-ctv ", f.kv_type_v, " differs from -ctk ", kv_type,
                                ": Strata keeps K and V in one type; give both the same (f16, f32, q8_0, q4_0)"));
    }
    if (f.n_ubatch > 0) r.session.n_batch = std::min(r.session.n_batch, f.n_ubatch);
    r.no_mmap = f.no_mmap;
    r.mlock = f.mlock;
    r.session.swa_full = f.swa_full;
    r.rope = parse_rope_options(f);
}

uint64_t parse_size_flag(const std::string& text, const std::string& flag) {
    const bool bare = !text.empty() && text.find_first_not_of("0123456789.") == std::string::npos;
    if (!bare) return parse_byte_size(text);
    const uint64_t bytes = parse_byte_size(text + "M");
    static bool said = false;
    if (!said) {
        std::fprintf(stderr, "note: %s %s has no unit: read as %s MiB (%s), as llama.cpp does; write %sM or a G size to say so\n",
                     flag.c_str(), text.c_str(), text.c_str(), format_bytes(bytes).c_str(), text.c_str());
        said = true;
    }
    return bytes;
}

}  // namespace strata::cli
