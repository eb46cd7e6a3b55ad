// Tensor roles from GGUF names (engine/core/tensor_role.h): the expectations are the GGUF naming
// convention ("blk.N.<stem>.weight|bias", globals without "blk."), written out by hand here.
#include <gtest/gtest.h>

#include <string>

#include "engine/core/tensor_role.h"

namespace strata {
namespace {

void expect_info(const std::string& name, TensorRole role, int layer) {
    const TensorNameInfo info = tensor_name_info(name);
    EXPECT_EQ(info.role, role) << name << ": " << tensor_role_name(info.role);
    EXPECT_EQ(info.layer, layer) << name;
}

TEST(TensorRole, GlobalTensors) {
    expect_info("token_embd.weight", TensorRole::TokenEmbd, -1);
    expect_info("output.weight", TensorRole::Output, -1);
    expect_info("output_norm.weight", TensorRole::OutputNorm, -1);
    expect_info("rope_freqs.weight", TensorRole::RopeFreqs, -1);
}

TEST(TensorRole, LayerTensorsWithTheirLayer) {
    expect_info("blk.0.attn_norm.weight", TensorRole::AttnNorm, 0);
    expect_info("blk.7.attn_q.weight", TensorRole::AttnQ, 7);
    expect_info("blk.7.attn_k.weight", TensorRole::AttnK, 7);
    expect_info("blk.7.attn_v.weight", TensorRole::AttnV, 7);
    expect_info("blk.12.attn_output.weight", TensorRole::AttnOutput, 12);
    expect_info("blk.3.attn_qkv.weight", TensorRole::AttnQkv, 3);
    expect_info("blk.3.attn_q_norm.weight", TensorRole::AttnQNorm, 3);
    expect_info("blk.3.attn_k_norm.weight", TensorRole::AttnKNorm, 3);
    expect_info("blk.79.post_attention_norm.weight", TensorRole::PostAttnNorm, 79);
    expect_info("blk.79.ffn_norm.weight", TensorRole::FfnNorm, 79);
    expect_info("blk.1.ffn_gate.weight", TensorRole::FfnGate, 1);
    expect_info("blk.1.ffn_up.weight", TensorRole::FfnUp, 1);
    expect_info("blk.1.ffn_down.weight", TensorRole::FfnDown, 1);
    expect_info("blk.1.post_ffw_norm.weight", TensorRole::PostFfnNorm, 1);
    expect_info("blk.47.ffn_gate_inp.weight", TensorRole::FfnGateInp, 47);
    expect_info("blk.47.ffn_gate_exps.weight", TensorRole::FfnGateExps, 47);
    expect_info("blk.47.ffn_up_exps.weight", TensorRole::FfnUpExps, 47);
    expect_info("blk.47.ffn_down_exps.weight", TensorRole::FfnDownExps, 47);
    expect_info("blk.2.ffn_gate_inp_shexp.weight", TensorRole::FfnGateInpShexp, 2);
    expect_info("blk.2.ffn_gate_shexp.weight", TensorRole::FfnGateShexp, 2);
    expect_info("blk.2.ffn_up_shexp.weight", TensorRole::FfnUpShexp, 2);
    expect_info("blk.2.ffn_down_shexp.weight", TensorRole::FfnDownShexp, 2);
}

TEST(TensorRole, BiasesAreTheirProjectionsStemWithBias) {
    expect_info("blk.5.attn_q.bias", TensorRole::AttnQBias, 5);
    expect_info("blk.5.attn_k.bias", TensorRole::AttnKBias, 5);
    expect_info("blk.5.attn_v.bias", TensorRole::AttnVBias, 5);
    // A bias this list does not know is kept as Other, with its layer.
    expect_info("blk.5.attn_output.bias", TensorRole::Other, 5);
    expect_info("blk.5.ffn_up.bias", TensorRole::Other, 5);
}

TEST(TensorRole, UnknownOrMalformedNamesAreOther) {
    expect_info("blk.4.attn_q.scale", TensorRole::Other, 4);        // not weight/bias
    expect_info("blk.4.output.weight", TensorRole::Other, 4);       // a global stem inside a block
    expect_info("attn_q.weight", TensorRole::Other, -1);            // a block stem outside the blocks
    expect_info("blk.x.attn_q.weight", TensorRole::Other, -1);      // no layer number
    expect_info("blk..attn_q.weight", TensorRole::Other, -1);
    expect_info("blk.4", TensorRole::Other, -1);
    expect_info("blk.4.", TensorRole::Other, 4);
    expect_info("blk.99999999999.attn_q.weight", TensorRole::Other, -1);  // layer out of range
    expect_info("", TensorRole::Other, -1);
    expect_info("token_embd", TensorRole::Other, -1);
    expect_info("v.blk.0.attn_q.weight", TensorRole::Other, -1);  // a vision tower's names
}

TEST(TensorRole, NamesAndClasses) {
    EXPECT_EQ(tensor_role_name(TensorRole::PostFfnNorm), "post_ffw_norm");
    EXPECT_EQ(tensor_role_name(TensorRole::AttnVBias), "attn_v_bias");
    EXPECT_EQ(tensor_role_name(TensorRole::Other), "other");
    EXPECT_TRUE(is_attention_role(TensorRole::AttnNorm));
    EXPECT_TRUE(is_attention_role(TensorRole::AttnVBias));
    EXPECT_FALSE(is_attention_role(TensorRole::PostAttnNorm));
    EXPECT_FALSE(is_attention_role(TensorRole::FfnGate));
    EXPECT_TRUE(is_norm_role(TensorRole::PostFfnNorm));
    EXPECT_FALSE(is_norm_role(TensorRole::FfnGate));
    EXPECT_TRUE(is_expert_role(TensorRole::FfnUpExps));
    EXPECT_FALSE(is_expert_role(TensorRole::FfnUpShexp));
    EXPECT_TRUE(is_vector_role(TensorRole::AttnKBias));
    // Every role's name parses back to the role (a layer role inside a block, a global outside).
    for (size_t i = 1; i < kTensorRoleCount; ++i) {
        const auto role = static_cast<TensorRole>(i);
        std::string stem(tensor_role_name(role));
        const bool bias = stem.ends_with("_bias");
        if (bias) stem.resize(stem.size() - 5);
        const bool global = role == TensorRole::TokenEmbd || role == TensorRole::Output ||
                            role == TensorRole::OutputNorm || role == TensorRole::RopeFreqs;
        const std::string name = (global ? "" : "blk.2.") + stem + (bias ? ".bias" : ".weight");
        EXPECT_EQ(tensor_name_info(name).role, role) << name;
    }
}

}  // namespace
}  // namespace strata
