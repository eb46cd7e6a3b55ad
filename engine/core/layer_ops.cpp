// The op lists of a layer's blocks (layer_ops.h), in the order layer_program.cpp issues them.
#include "engine/core/layer_ops.h"

#include <array>

namespace strata {
namespace {

using K = LayerOpKind;
using W = TensorRole;
constexpr TensorRole kNone = kNoWeight;
using A = LayerAct;

constexpr FusedGroup kPrologue = FusedGroup::Prologue, kEnd = FusedGroup::BlockEnd, kStart = FusedGroup::BlockStart;

constexpr std::array kAttention{
    LayerOp{K::Norm, W::AttnNorm, A::Residual, kNone, false, kStart},
    LayerOp{K::Product, W::AttnQ, A::Normed},
    LayerOp{K::Product, W::AttnK, A::Normed},
    LayerOp{K::Product, W::AttnV, A::Normed},
    LayerOp{K::Add, W::AttnQBias, A::Q, W::AttnQBias, false, kPrologue},
    LayerOp{K::Add, W::AttnKBias, A::K, W::AttnKBias, false, kPrologue},
    LayerOp{K::Add, W::AttnVBias, A::V, W::AttnVBias, false, kPrologue},
    LayerOp{K::Norm, W::AttnQNorm, A::Q, W::AttnQNorm, false, kPrologue},
    LayerOp{K::Norm, W::AttnKNorm, A::K, W::AttnKNorm, false, kPrologue},
    LayerOp{K::Rope, kNone, A::Q, kNone, false, kPrologue},
    LayerOp{K::Rope, kNone, A::K, kNone, false, kPrologue},
    LayerOp{K::KvStore, kNone, A::K, kNone, false, kPrologue},
    LayerOp{K::KvStore, kNone, A::V, kNone, false, kPrologue},
    LayerOp{K::Attention, kNone, A::Q},
    LayerOp{K::Product, W::AttnOutput, A::Attn},
    LayerOp{K::Norm, W::PostAttnNorm, A::Proj, W::PostAttnNorm, false, kEnd},
    LayerOp{K::Add, kNone, A::Proj, kNone, false, kEnd},  // the residual
};

constexpr std::array kFfn{
    LayerOp{K::Norm, W::FfnNorm, A::Residual, kNone, false, kStart},
    LayerOp{K::Product, W::FfnGate, A::Normed, kNone, true},
    LayerOp{K::Product, W::FfnUp, A::Normed, kNone, true},
    LayerOp{K::GatedActivation, kNone, A::Gate, kNone, true},
    LayerOp{K::Product, W::FfnDown, A::Gate, kNone, true},
    LayerOp{K::Norm, W::PostFfnNorm, A::Proj, W::PostFfnNorm, false, kEnd},
    LayerOp{K::Add, kNone, A::Proj, kNone, false, kEnd},  // the residual
};

}  // namespace

std::span<const LayerOp> attention_block_ops() { return kAttention; }
std::span<const LayerOp> ffn_block_ops() { return kFfn; }

int ffn_part_small_ops() {
    int n = 0;
    std::array<LayerOp, kFfn.size()> part{};
    for (const LayerOp& op : kFfn)
        if (op.per_part) part[static_cast<size_t>(n++)] = op;
    return block_small_ops(std::span(part.data(), static_cast<size_t>(n)), [](TensorRole) { return true; }) + 1;
}

}  // namespace strata
