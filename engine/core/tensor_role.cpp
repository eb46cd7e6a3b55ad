// Tensor roles from GGUF names (see tensor_role.h).
#include "engine/core/tensor_role.h"

#include <cstdint>
#include <array>
#include <utility>

namespace strata {
namespace {

// Each role with its GGUF name stem ("blk.N.<stem>.weight", or "<stem>.weight" outside the
// blocks); the biases are "<stem>.bias" of the projection's stem.
struct RoleStem {
    TensorRole role;
    std::string_view name;  // tensor_role_name
    std::string_view stem;  // in the file
    bool bias = false;
    bool global = false;
};

constexpr std::array<RoleStem, kTensorRoleCount> kRoles{{
    {TensorRole::Other, "other", "", false, false},
    {TensorRole::TokenEmbd, "token_embd", "token_embd", false, true},
    {TensorRole::Output, "output", "output", false, true},
    {TensorRole::OutputNorm, "output_norm", "output_norm", false, true},
    {TensorRole::RopeFreqs, "rope_freqs", "rope_freqs", false, true},
    {TensorRole::AttnNorm, "attn_norm", "attn_norm"},
    {TensorRole::AttnQ, "attn_q", "attn_q"},
    {TensorRole::AttnK, "attn_k", "attn_k"},
    {TensorRole::AttnV, "attn_v", "attn_v"},
    {TensorRole::AttnOutput, "attn_output", "attn_output"},
    {TensorRole::AttnQkv, "attn_qkv", "attn_qkv"},
    {TensorRole::AttnQNorm, "attn_q_norm", "attn_q_norm"},
    {TensorRole::AttnKNorm, "attn_k_norm", "attn_k_norm"},
    {TensorRole::AttnQBias, "attn_q_bias", "attn_q", true},
    {TensorRole::AttnKBias, "attn_k_bias", "attn_k", true},
    {TensorRole::AttnVBias, "attn_v_bias", "attn_v", true},
    {TensorRole::PostAttnNorm, "post_attention_norm", "post_attention_norm"},
    {TensorRole::FfnNorm, "ffn_norm", "ffn_norm"},
    {TensorRole::FfnGate, "ffn_gate", "ffn_gate"},
    {TensorRole::FfnUp, "ffn_up", "ffn_up"},
    {TensorRole::FfnDown, "ffn_down", "ffn_down"},
    {TensorRole::PostFfnNorm, "post_ffw_norm", "post_ffw_norm"},
    {TensorRole::FfnGateInp, "ffn_gate_inp", "ffn_gate_inp"},
    {TensorRole::FfnGateExps, "ffn_gate_exps", "ffn_gate_exps"},
    {TensorRole::FfnUpExps, "ffn_up_exps", "ffn_up_exps"},
    {TensorRole::FfnDownExps, "ffn_down_exps", "ffn_down_exps"},
    {TensorRole::FfnGateInpShexp, "ffn_gate_inp_shexp", "ffn_gate_inp_shexp"},
    {TensorRole::FfnGateShexp, "ffn_gate_shexp", "ffn_gate_shexp"},
    {TensorRole::FfnUpShexp, "ffn_up_shexp", "ffn_up_shexp"},
    {TensorRole::FfnDownShexp, "ffn_down_shexp", "ffn_down_shexp"},
}};
static_assert([] {
    for (size_t i = 0; i < kRoles.size(); ++i)
        if (static_cast<size_t>(kRoles[i].role) != i) return false;
    return true;
}(), "kRoles lists every role once, in the enum's order");

// "blk.12.rest" -> {12, "rest"}; {-1, name} when the name does not start with "blk.<digits>.".
std::pair<int, std::string_view> split_layer(std::string_view name) {
    constexpr std::string_view prefix = "blk.";
    if (!name.starts_with(prefix)) return {-1, name};
    size_t i = prefix.size();
    int64_t layer = 0;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && layer < (1 << 24)) {
        layer = layer * 10 + (name[i] - '0');
        ++i;
    }
    if (i == prefix.size() || i >= name.size() || name[i] != '.') return {-1, name};
    return {static_cast<int>(layer), name.substr(i + 1)};
}

}  // namespace

std::string_view tensor_role_name(TensorRole role) {
    const auto i = static_cast<size_t>(role);
    return i < kRoles.size() ? kRoles[i].name : "other";
}

bool is_norm_role(TensorRole role) {
    switch (role) {
        case TensorRole::OutputNorm:
        case TensorRole::AttnNorm:
        case TensorRole::AttnQNorm:
        case TensorRole::AttnKNorm:
        case TensorRole::PostAttnNorm:
        case TensorRole::FfnNorm:
        case TensorRole::PostFfnNorm:
            return true;
        default:
            return false;
    }
}

bool is_vector_role(TensorRole role) {
    return role == TensorRole::AttnQBias || role == TensorRole::AttnKBias ||
           role == TensorRole::AttnVBias || role == TensorRole::RopeFreqs ||
           role == TensorRole::FfnGateInpShexp;
}

bool is_expert_role(TensorRole role) {
    return role == TensorRole::FfnGateExps || role == TensorRole::FfnUpExps ||
           role == TensorRole::FfnDownExps;
}

bool is_attention_role(TensorRole role) {
    return role >= TensorRole::AttnNorm && role <= TensorRole::AttnVBias;
}

TensorNameInfo tensor_name_info(std::string_view name) {
    const auto [layer, rest] = split_layer(name);
    const size_t dot = rest.rfind('.');
    if (dot == std::string_view::npos) return {TensorRole::Other, layer};
    const std::string_view stem = rest.substr(0, dot), kind = rest.substr(dot + 1);
    if (kind != "weight" && kind != "bias") return {TensorRole::Other, layer};
    for (const RoleStem& r : kRoles) {
        if (r.role == TensorRole::Other || r.stem != stem || r.bias != (kind == "bias")) continue;
        if (r.global != (layer < 0)) continue;
        return {r.role, layer};
    }
    return {TensorRole::Other, layer};
}

}  // namespace strata
