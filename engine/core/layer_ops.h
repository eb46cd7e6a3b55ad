// The ops one transformer layer issues, block by block in program order: the description the
// layer program's math follows (engine/runtime/layer_program.cpp) and the cost model counts
// (offload/cost_model.cpp), so the two cannot drift apart. A mixture-of-experts FFN is not
// described here (its op count depends on the routing: layer_program_moe.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "engine/core/tensor_role.h"

namespace strata {

// An op's weight is the TensorRole of the layer tensor it reads (engine/core/tensor_role.h);
// kNoWeight: none.
inline constexpr TensorRole kNoWeight = TensorRole::Other;

enum class LayerOpKind : uint8_t {
    Norm,             // rms_norm, with its weight
    Product,          // weight · activation (a matrix product)
    Add,              // a bias, a partial sum or the residual
    Rope,
    KvStore,
    Attention,        // over the KV cache
    GatedActivation,  // act(gate) ⊙ up
};

// The activation an op reads (products of one input share its quantization on the CPU).
enum class LayerAct : uint8_t { Residual, Normed, Q, K, V, Attn, Gate, Up, Proj };

// The fused op (Backend::attention_prologue, add_rms_norm) an op belongs to on a backend that
// fuses them (CUDA): Prologue, attention's biases, q/k norms, RoPE and KV stores; BlockEnd, a
// block's post norm and residual add; BlockStart, a block's input norm, which the previous
// block's end computes with its add.
enum class FusedGroup : uint8_t { None, Prologue, BlockEnd, BlockStart };

struct LayerOp {
    LayerOpKind kind;
    TensorRole weight = kNoWeight;  // the weight it reads, if any
    LayerAct input = LayerAct::Normed;
    // Only when the layer has this tensor (biases, q/k norms, post norms); kNoWeight: always.
    TensorRole optional = kNoWeight;
    // An FFN op each part of a split FFN runs on its own backend (products, activation).
    bool per_part = false;
    FusedGroup fused = FusedGroup::None;
};

// x += [post_norm](Wo · attention(rope(norm_qk(Wq·n(x) + bq)), rope(..Wk..), Wv..))
std::span<const LayerOp> attention_block_ops();
// x += [post_norm](Wdown · (act(Wgate·n(x)) ⊙ Wup·n(x)))
std::span<const LayerOp> ffn_block_ops();

// The small ops of a block (everything but its products and its attention), counting one
// activation quantization per distinct product input (the CPU quantizes it once for all the
// products that read it); `has(w)` says whether the layer has an optional weight.
// fused: the kernels of a backend with the fused ops (CUDA) instead: each fused group present
// once, BlockStart none (the previous block's end made it), and no quantization of an input
// that the RMSNorm or the gated activation already wrote quantized (the attention's output is
// quantized apart).
template <typename Has>
int block_small_ops(std::span<const LayerOp> ops, Has&& has, bool fused = false) {
    int n = 0;
    uint32_t groups = 0, inputs = 0;  // bit per FusedGroup / LayerAct
    for (const LayerOp& op : ops) {
        if (op.optional != kNoWeight && !has(op.optional)) continue;
        if (op.kind == LayerOpKind::Product) {
            const bool written_quantized = fused && (op.input == LayerAct::Normed || op.input == LayerAct::Gate);
            if (!written_quantized) inputs |= 1u << static_cast<unsigned>(op.input);
        } else if (fused && op.fused != FusedGroup::None) {
            if (op.fused != FusedGroup::BlockStart) groups |= 1u << static_cast<unsigned>(op.fused);
        } else if (op.kind != LayerOpKind::Attention) {
            ++n;
        }
    }
    for (; groups != 0; groups &= groups - 1) ++n;
    for (; inputs != 0; inputs &= inputs - 1) ++n;
    return n;
}
// The small ops each extra part of a split FFN adds: its per_part ops and the add of its
// partial sum at the home.
int ffn_part_small_ops();

}  // namespace strata
