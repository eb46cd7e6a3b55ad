// What a model tensor is for, read from its GGUF name in one place (tensor_name_info): the
// architectures' expected-tensor lists (engine/model), the tensor table the planner and the
// cost model rate (offload), and the runtime's budgets all key on TensorRole, never on names.
#pragma once

#include <cstddef>
#include <string_view>

namespace strata {

enum class TensorRole {
    Other,  // a name this list does not know (kept, placed, never multiplied by role)
    TokenEmbd,
    Output,
    OutputNorm,
    RopeFreqs,
    AttnNorm,
    AttnQ,
    AttnK,
    AttnV,
    AttnOutput,
    AttnQkv,  // fused q/k/v rows [n_embd, n_q + n_k + n_v] (phi3; see engine/model/fused_tensors.h)
    AttnQNorm,
    AttnKNorm,
    AttnQBias,
    AttnKBias,
    AttnVBias,
    PostAttnNorm,
    FfnNorm,
    FfnGate,
    FfnUp,  // [n_embd, n_ff]; with fused gate/up (phi3) [n_embd, 2*n_ff], gate rows first
    FfnDown,
    PostFfnNorm,
    FfnGateInp,       // MoE router [n_embd, n_expert]
    FfnGateExps,      // [n_embd, n_ff_exp, n_expert]: expert e is the contiguous slice ne[2] = e
    FfnUpExps,
    FfnDownExps,      // [n_ff_exp, n_embd, n_expert]
    FfnGateInpShexp,  // [n_embd]: the shared expert's sigmoid gate (qwen2moe)
    FfnGateShexp,
    FfnUpShexp,
    FfnDownShexp,  // the last: kTensorRoleCount follows it
};
inline constexpr size_t kTensorRoleCount = static_cast<size_t>(TensorRole::FfnDownShexp) + 1;

// "attn_q", "attn_q_bias", "post_ffw_norm" ...; "other" for Other.
std::string_view tensor_role_name(TensorRole role);
// Norm weights (kept F32, values around 1).
bool is_norm_role(TensorRole role);
// The MoE expert tensors (3-D, one matrix per expert).
bool is_expert_role(TensorRole role);
// Biases and per-dimension factors (1-D, kept F32).
bool is_vector_role(TensorRole role);
// A layer's attention tensors (attn_*: projections, norms, biases; not post_attention_norm).
bool is_attention_role(TensorRole role);

struct TensorNameInfo {
    TensorRole role = TensorRole::Other;
    int layer = -1;  // N of "blk.N.", -1 for tensors outside the blocks (or a malformed N)
};

// "blk.3.attn_q.weight" -> {AttnQ, 3}; "output.weight" -> {Output, -1}; "blk.3.attn_q.bias" ->
// {AttnQBias, 3}; anything else -> {Other, layer or -1}. The one place a name becomes a role.
TensorNameInfo tensor_name_info(std::string_view name);

}  // namespace strata
