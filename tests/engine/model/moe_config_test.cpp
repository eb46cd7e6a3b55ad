// Mixture-of-experts models: the keys read into ModelConfig::moe, the expert tensors expected,
// and the errors for inconsistent files (each names the key or tensor and the counts).
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/model/arch_spec.h"
#include "engine/model/tensor_spec.h"
#include "tests/engine/model/expect_error.h"

namespace strata::testing {
namespace {

TEST(MoeConfig, Qwen3MoeReadsBack) {
    const ModelConfig c = load_config(TestModel::from_preset("tiny-qwen3moe"));
    EXPECT_EQ(c.architecture, "qwen3moe");
    EXPECT_TRUE(c.is_moe());
    EXPECT_EQ(c.moe.n_expert, 8);
    EXPECT_EQ(c.moe.n_expert_used, 2);
    EXPECT_EQ(c.moe.n_ff_exp, 256);
    EXPECT_EQ(c.moe.n_ff_shexp, 0);
    EXPECT_TRUE(c.moe.norm_topk);
    EXPECT_TRUE(c.has_qk_norm);
    EXPECT_EQ(c.rope.style, RopeStyle::Neox);
}

TEST(MoeConfig, MixtralIsLlamaWithExpertsAsWideAsNff) {
    const ModelConfig c = load_config(TestModel::from_preset("tiny-mixtral"));
    EXPECT_EQ(c.architecture, "llama");
    EXPECT_EQ(c.moe.n_expert, 4);
    EXPECT_EQ(c.moe.n_expert_used, 2);
    EXPECT_EQ(c.moe.n_ff_exp, 512);  // no expert_feed_forward_length: n_ff
    EXPECT_TRUE(c.moe.norm_topk);
    EXPECT_EQ(c.rope.style, RopeStyle::Norm);
}

TEST(MoeConfig, WeightsNormKeyOverridesTheDefault) {
    TestModel m = TestModel::from_preset("tiny-qwen3moe");
    m.set_arch("expert_weights_norm", GgufValue::boolean(false));
    m.set_arch("expert_weights_scale", GgufValue::f32(2.5f));
    const ModelConfig c = load_config(m);
    EXPECT_FALSE(c.moe.norm_topk);
    EXPECT_DOUBLE_EQ(c.moe.weights_scale, 2.5);
}

TEST(MoeConfig, ExpectedTensorsAreTheRouterAndThreeDimensionalExperts) {
    const ModelConfig c = load_config(TestModel::from_preset("tiny-qwen3moe"));
    int experts = 0, routers = 0, dense = 0;
    for (const TensorSpec& s : expected_tensors(c)) {
        if (is_expert_role(s.role)) {
            ++experts;
            ASSERT_EQ(s.ne.size(), 3u) << s.name;
            EXPECT_EQ(s.ne[2], 8) << s.name;
        }
        routers += s.role == TensorRole::FfnGateInp;
        dense += s.role == TensorRole::FfnGate || s.role == TensorRole::FfnUp || s.role == TensorRole::FfnDown;
    }
    EXPECT_EQ(experts, 3 * 4);
    EXPECT_EQ(routers, 4);
    EXPECT_EQ(dense, 0);
}

TEST(MoeErrors, ExpertUsedCountAboveExpertCount) {
    TestModel m = TestModel::from_preset("tiny-qwen3moe");
    m.set_arch("expert_used_count", GgufValue::u32(9));
    expect_load_error<FormatError>(m, {"qwen3moe.expert_used_count is 9", "expected 1..8", "qwen3moe.expert_count"});
}

TEST(MoeErrors, MissingExpertUsedCount) {
    TestModel m = TestModel::from_preset("tiny-mixtral");
    m.erase_arch("expert_used_count");
    expect_load_error<FormatError>(m, {"missing required key 'llama.expert_used_count'"});
}

TEST(MoeErrors, MoeArchitectureWithoutExpertCount) {
    TestModel m = TestModel::from_preset("tiny-qwen3moe");
    m.erase_arch("expert_count");
    expect_load_error<FormatError>(m, {"missing required key 'qwen3moe.expert_count'"});
}

TEST(MoeErrors, MissingRouterNamesTheTensor) {
    TestModel m = TestModel::from_preset("tiny-qwen3moe");
    m.erase_tensor("blk.2.ffn_gate_inp.weight");
    expect_load_error<FormatError>(m, {"missing router tensor 'blk.2.ffn_gate_inp.weight'", "[256, 8]", "8 experts"});
}

TEST(MoeErrors, RouterScoresAnotherExpertCount) {
    TestModel m = TestModel::from_preset("tiny-mixtral");
    m.reshape_tensor("blk.0.ffn_gate_inp.weight", {256, 8});
    expect_load_error<FormatError>(m, {"'blk.0.ffn_gate_inp.weight' scores 8 experts", "llama.expert_count is 4"});
}

TEST(MoeErrors, ExpertTensorHoldsAnotherExpertCount) {
    TestModel m = TestModel::from_preset("tiny-qwen3moe");
    m.reshape_tensor("blk.1.ffn_up_exps.weight", {256, 256, 4});
    expect_load_error<FormatError>(
        m, {"expert tensor 'blk.1.ffn_up_exps.weight'", "holds 4 experts", "qwen3moe.expert_count is 8"});
}

TEST(MoeErrors, TwoDimensionalExpertTensor) {
    TestModel m = TestModel::from_preset("tiny-qwen3moe");
    m.reshape_tensor("blk.0.ffn_gate_exps.weight", {256, 2048});
    expect_load_error<FormatError>(m, {"'blk.0.ffn_gate_exps.weight'", "holds 1 experts", "expected 3-D"});
}

TEST(MoeErrors, WrongExpertMatrixShape) {
    TestModel m = TestModel::from_preset("tiny-qwen3moe");
    m.reshape_tensor("blk.3.ffn_down_exps.weight", {128, 256, 8});
    expect_load_error<FormatError>(
        m, {"'blk.3.ffn_down_exps.weight'", "[128, 256, 8]", "expected [256, 256, 8]", "[n_ff_exp, n_embd, n_expert]"});
}

TEST(MoeErrors, MissingExpertTensor) {
    TestModel m = TestModel::from_preset("tiny-mixtral");
    m.erase_tensor("blk.1.ffn_down_exps.weight");
    expect_load_error<FormatError>(m, {"missing required tensor 'blk.1.ffn_down_exps.weight'", "[512, 256, 4]"});
}

TEST(MoeErrors, OldOneTensorPerExpertLayout) {
    TestModel m = TestModel::from_preset("tiny-mixtral");
    m.add_tensor({"blk.0.ffn_gate.0.weight", GgmlType::Q4_K, {256, 512}});
    expect_load_error<UnsupportedError>(m, {"'blk.0.ffn_gate.0.weight'", "ffn_{gate,up,down}_exps"});
}

TEST(MoeErrors, UnknownArchitectureListsTheSupportedOnes) {
    try {
        arch_spec("deepseek2");
        ADD_FAILURE() << "deepseek2 accepted";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("'deepseek2' is not supported"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("qwen2moe, qwen3, qwen3moe"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace strata::testing
