// The op lists of a layer's blocks (layer_ops.h), in the order layer_program.cpp issues them.
#include "engine/core/layer_ops.h"

#include <array>

namespace strata {
namespace {

using K = LayerOpKind;
using W = LayerWeight;
using A = LayerAct;

constexpr std::array kAttention{
    LayerOp{K::Norm, W::AttnNorm, A::Residual},
    LayerOp{K::Product, W::AttnQ, A::Normed},
    LayerOp{K::Product, W::AttnK, A::Normed},
    LayerOp{K::Product, W::AttnV, A::Normed},
    LayerOp{K::Add, W::AttnQBias, A::Q, W::AttnQBias},
    LayerOp{K::Add, W::AttnKBias, A::K, W::AttnKBias},
    LayerOp{K::Add, W::AttnVBias, A::V, W::AttnVBias},
    LayerOp{K::Norm, W::AttnQNorm, A::Q, W::AttnQNorm},
    LayerOp{K::Norm, W::AttnKNorm, A::K, W::AttnKNorm},
    LayerOp{K::Rope, W::None, A::Q},
    LayerOp{K::Rope, W::None, A::K},
    LayerOp{K::KvStore, W::None, A::K},
    LayerOp{K::KvStore, W::None, A::V},
    LayerOp{K::Attention, W::None, A::Q},
    LayerOp{K::Product, W::AttnOutput, A::Attn},
    LayerOp{K::Norm, W::PostAttnNorm, A::Proj, W::PostAttnNorm},
    LayerOp{K::Add, W::None, A::Proj},  // the residual
};

constexpr std::array kFfn{
    LayerOp{K::Norm, W::FfnNorm, A::Residual},
    LayerOp{K::Product, W::FfnGate, A::Normed, W::None, true},
    LayerOp{K::Product, W::FfnUp, A::Normed, W::None, true},
    LayerOp{K::GatedActivation, W::None, A::Gate, W::None, true},
    LayerOp{K::Product, W::FfnDown, A::Gate, W::None, true},
    LayerOp{K::Norm, W::PostFfwNorm, A::Proj, W::PostFfwNorm},
    LayerOp{K::Add, W::None, A::Proj},  // the residual
};

}  // namespace

std::span<const LayerOp> attention_block_ops() { return kAttention; }
std::span<const LayerOp> ffn_block_ops() { return kFfn; }

int ffn_part_small_ops() {
    int n = 0;
    std::array<LayerOp, kFfn.size()> part{};
    for (const LayerOp& op : kFfn)
        if (op.per_part) part[static_cast<size_t>(n++)] = op;
    return block_small_ops(std::span(part.data(), static_cast<size_t>(n)), [](LayerWeight) { return true; }) + 1;
}

std::string_view layer_weight_suffix(LayerWeight w) {
    switch (w) {
        case W::None: return "";
        case W::AttnNorm: return "attn_norm.weight";
        case W::AttnQ: return "attn_q.weight";
        case W::AttnK: return "attn_k.weight";
        case W::AttnV: return "attn_v.weight";
        case W::AttnQBias: return "attn_q.bias";
        case W::AttnKBias: return "attn_k.bias";
        case W::AttnVBias: return "attn_v.bias";
        case W::AttnQNorm: return "attn_q_norm.weight";
        case W::AttnKNorm: return "attn_k_norm.weight";
        case W::AttnOutput: return "attn_output.weight";
        case W::PostAttnNorm: return "post_attention_norm.weight";
        case W::FfnNorm: return "ffn_norm.weight";
        case W::FfnGate: return "ffn_gate.weight";
        case W::FfnUp: return "ffn_up.weight";
        case W::FfnDown: return "ffn_down.weight";
        case W::PostFfwNorm: return "post_ffw_norm.weight";
    }
    return "";
}

}  // namespace strata
