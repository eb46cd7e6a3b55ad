// Fused-tensor row ranges (fused_tensors.h).
#include "engine/model/fused_tensors.h"

#include <charconv>

#include "engine/core/error.h"
#include "engine/model/model_config.h"

namespace strata {

WeightSource weight_source(const ModelConfig& c, int il, std::string_view suffix) {
    const std::string prefix = cat("blk.", il, ".");
    if (c.fused_qkv) {
        const int64_t n_q = c.n_embd_q(il), n_k = c.n_embd_k_gqa(il), n_v = c.n_embd_v_gqa(il);
        const std::string qkv = prefix + "attn_qkv.weight";
        if (suffix == "attn_q.weight") return {qkv, RowRange{0, n_q}};
        if (suffix == "attn_k.weight") return {qkv, RowRange{n_q, n_k}};
        if (suffix == "attn_v.weight") return {qkv, RowRange{n_q + n_k, n_v}};
    }
    if (c.fused_gate_up) {
        const int64_t n_ff = c.n_ff.at(il);
        const std::string up = prefix + "ffn_up.weight";
        if (suffix == "ffn_gate.weight") return {up, RowRange{0, n_ff}};
        if (suffix == "ffn_up.weight") return {up, RowRange{n_ff, n_ff}};
    }
    return {prefix + std::string(suffix), std::nullopt};
}

std::string file_tensor_name(const ModelConfig& c, std::string_view name) {
    constexpr std::string_view kPrefix = "blk.";
    if ((!c.fused_qkv && !c.fused_gate_up) || name.substr(0, kPrefix.size()) != kPrefix) return std::string(name);
    const char* digits = name.data() + kPrefix.size();
    const char* end = name.data() + name.size();
    int il = -1;
    const auto [dot, ec] = std::from_chars(digits, end, il);
    if (ec != std::errc() || dot == end || *dot != '.' || il < 0 || il >= c.n_layer) return std::string(name);
    return weight_source(c, il, std::string_view(dot + 1, static_cast<size_t>(end - dot - 1))).tensor;
}

}  // namespace strata
