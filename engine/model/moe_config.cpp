// Mixture-of-experts keys and expert tensor checks (moe_config.h).
#include "engine/model/moe_config.h"

#include <cmath>

#include "engine/core/error.h"
#include "engine/gguf/model_file.h"
#include "engine/model/arch_spec.h"
#include "engine/model/config_checks.h"
#include "engine/model/gguf_keys.h"
#include "engine/model/key_reader.h"
#include "engine/model/model_config.h"

namespace strata {
namespace {

std::string moe_architectures() {
    std::string list;
    for (std::string_view name : supported_architectures()) {
        if (arch_spec(name).moe == MoeSupport::None) continue;
        list += (list.empty() ? "" : ", ") + std::string(name);
    }
    return list;
}

void check_router(const ModelFile& file, const ModelConfig& c, int il) {
    const std::string name = cat("blk.", il, ".ffn_gate_inp.weight");
    const TensorInfo* t = file.find_tensor(name);
    if (t == nullptr) {
        throw FormatError(cat(file.path(), ": missing router tensor '", name, "' [n_embd, n_expert] = [",
                              c.n_embd, ", ", c.moe.n_expert, "] of a ", c.architecture, " model with ",
                              c.moe.n_expert, " experts"));
    }
    if (t->ne[1] != c.moe.n_expert) {
        throw FormatError(cat(file.path(), ": router tensor '", name, "' scores ", t->ne[1],
                              " experts (ne[1]) but ", c.architecture, ".expert_count is ", c.moe.n_expert));
    }
}

void check_expert_tensor(const ModelFile& file, const ModelConfig& c, int il, const char* suffix) {
    const std::string name = cat("blk.", il, ".", suffix);
    const TensorInfo* t = file.find_tensor(name);
    if (t == nullptr) return;  // validate_tensors names it with its expected shape
    if (t->ne[3] != 1 || t->ne[2] != c.moe.n_expert) {
        throw FormatError(cat(file.path(), ": expert tensor '", name, "' has shape ", t->shape_string(),
                              ": it holds ", t->ne[2] * t->ne[3], " experts (ne[2]) but ", c.architecture,
                              ".expert_count is ", c.moe.n_expert, " (expected 3-D [.., .., ", c.moe.n_expert, "])"));
    }
}

}  // namespace

void read_moe_keys(const KeyReader& keys, const ArchSpec& spec, ModelConfig& c) {
    MoeConfig& m = c.moe;
    const std::string count_key = keys.key(keys::kExpertCount);
    m.n_expert = keys.find_int(count_key).value_or(0);
    if (m.n_expert == 0) {
        if (spec.moe == MoeSupport::Required) {
            keys.fail(cat("missing required key '", count_key, "' (a ", spec.name, " model routes over experts)"));
        }
        return;
    }
    if (spec.moe == MoeSupport::None) {
        throw UnsupportedError(cat(spec.name, " has no mixture-of-experts variant, but '", count_key, "' is ",
                                   m.n_expert, " (architectures with experts: ", moe_architectures(), ")"));
    }
    check_range(keys, count_key, m.n_expert, 1, kMaxExperts);
    const std::string used_key = keys.key(keys::kExpertUsedCount);
    if (!keys.has(used_key)) keys.fail(cat("missing required key '", used_key, "' (experts used per token)"));
    m.n_expert_used = keys.require_int(used_key);
    if (m.n_expert_used < 1 || m.n_expert_used > m.n_expert) {
        keys.fail(cat(used_key, " is ", m.n_expert_used, ", expected 1..", m.n_expert, " (", count_key, ")"));
    }
    // llama.cpp's defaults: an expert as wide as n_ff (llama), or n_ff split over the used
    // experts (qwen2moe, qwen3moe); a shared expert as wide as n_ff.
    const int64_t n_ff = c.n_ff.at(0);
    const int64_t ff_default = spec.moe == MoeSupport::Optional ? n_ff : n_ff / m.n_expert_used;
    const std::string ff_key = keys.key(keys::kExpertFeedForwardLength);
    m.n_ff_exp = keys.find_int(ff_key).value_or(ff_default);
    check_range(keys, ff_key, m.n_ff_exp, 1, kMaxFf);
    if (spec.moe_shared_expert) {
        const std::string sh_key = keys.key(keys::kExpertSharedFeedForwardLength);
        m.n_ff_shexp = keys.find_int(sh_key).value_or(n_ff);
        check_range(keys, sh_key, m.n_ff_shexp, 1, kMaxFf);
        m.shared_gate = true;
    }
    m.norm_topk = keys.find_bool(keys.key(keys::kExpertWeightsNorm)).value_or(spec.moe_norm_topk);
    const double scale = keys.find_float(keys.key(keys::kExpertWeightsScale)).value_or(0.0);
    m.weights_scale = scale == 0.0 ? 1.0 : scale;  // llama.cpp: 0 (unset) means no scaling
    if (!std::isfinite(m.weights_scale) || m.weights_scale < 0.0) {
        keys.fail(cat(keys.key(keys::kExpertWeightsScale), " is ", m.weights_scale, ", expected a finite value >= 0"));
    }
}

void check_expert_tensors(const ModelFile& file, const ModelConfig& c) {
    if (!c.is_moe()) return;
    for (int il = 0; il < c.n_layer; ++il) {
        const std::string old_name = cat("blk.", il, ".ffn_gate.0.weight");
        if (file.find_tensor(old_name) != nullptr) {
            throw UnsupportedError(cat(file.path(), ": tensor '", old_name, "' is one expert stored on its own (the ",
                                       "pre-2024 Mixtral layout); Strata reads the 3-D ffn_{gate,up,down}_exps",
                                       " layout: convert the model again with a current converter"));
        }
        check_router(file, c, il);
        for (const char* suffix : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"})
            check_expert_tensor(file, c, il, suffix);
    }
}

}  // namespace strata
