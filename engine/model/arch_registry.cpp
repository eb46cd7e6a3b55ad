// The table of supported architectures, keyed by general.architecture.
#include <algorithm>
#include <array>
#include <cmath>

#include "engine/core/error.h"
#include "engine/model/arch_spec.h"

namespace strata {
namespace {

using ArchFn = const ArchSpec& (*)();
constexpr std::array<ArchFn, 8> kArchs = {gemma2_arch, gemma3_arch, llama_arch,    phi3_arch,
                                          qwen2_arch,  qwen2moe_arch, qwen3_arch, qwen3moe_arch};

}  // namespace

ArchSpec moe_variant(const ArchSpec& dense, const MoeVariant& moe) {
    ArchSpec s = dense;
    s.name = moe.name;
    s.description = moe.description;
    s.moe = MoeSupport::Required;
    s.moe_norm_topk = moe.norm_topk;
    s.moe_shared_expert = moe.shared_expert;
    return s;
}

void read_head_dim_kq_scale(const KeyReader&, ModelConfig& c) {
    c.kq_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim_k));
}

const ArchSpec* find_arch(std::string_view name) {
    for (ArchFn fn : kArchs) {
        if (fn().name == name) return &fn();
    }
    return nullptr;
}

std::vector<std::string_view> supported_architectures() {
    std::vector<std::string_view> names;
    for (ArchFn fn : kArchs)
        names.push_back(fn().name);
    std::sort(names.begin(), names.end());
    return names;
}

const ArchSpec& arch_spec(std::string_view name) {
    if (const ArchSpec* spec = find_arch(name)) return *spec;
    std::string list;
    for (std::string_view n : supported_architectures())
        list += (list.empty() ? "" : ", ") + std::string(n);
    throw UnsupportedError(
        cat("architecture '", name, "' is not supported (supported: ", list, ")"));
}

}  // namespace strata
