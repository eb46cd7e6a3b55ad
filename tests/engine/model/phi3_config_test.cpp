// Architecture "phi3": fused attn_qkv and gate/up ffn_up read as such (their row ranges are the
// q/k/v and gate/up weights), NEOX RoPE, the sliding window on every layer; a fused tensor that
// is missing or of the wrong size is refused naming the tensor and both shapes; LongRoPE factor
// tensors (Phi-3 128k) are refused by name.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/model/fused_tensors.h"
#include "tests/engine/model/expect_error.h"

namespace strata::testing {
namespace {

// tiny-phi3: n_embd 256, 4 layers, 4 heads / 2 KV heads of 64, n_ff 768, window 64.
constexpr int64_t kQ = 4 * 64, kKv = 2 * 64, kFf = 768;

TEST(Phi3Config, ReadsFusedLayoutNeoxRopeAndWindowOnEveryLayer) {
    const ModelConfig c = load_config(TestModel::from_preset("tiny-phi3"));
    EXPECT_EQ(c.architecture, "phi3");
    EXPECT_TRUE(c.fused_qkv);
    EXPECT_TRUE(c.fused_gate_up);
    EXPECT_EQ(c.rope.style, RopeStyle::Neox);
    EXPECT_EQ(c.activation, Activation::Silu);
    EXPECT_FALSE(c.tied_output);
    EXPECT_EQ(c.sliding_window, 64);
    ASSERT_EQ(c.is_swa.size(), 4u);
    EXPECT_TRUE(std::all_of(c.is_swa.begin(), c.is_swa.end(), [](bool b) { return b; }));
    EXPECT_DOUBLE_EQ(c.rope.freq_base_swa, c.rope.freq_base);
    EXPECT_NEAR(c.kq_scale, 0.125, 1e-12);  // 1 / sqrt(64)
}

TEST(Phi3Config, WithoutAWindowKeyEveryLayerAttendsFully) {  // Phi-4's files carry 0 or none
    TestModel m = TestModel::from_preset("tiny-phi3");
    m.erase_arch("attention.sliding_window");
    const ModelConfig c = load_config(m);
    EXPECT_EQ(c.sliding_window, 0);
    EXPECT_TRUE(std::none_of(c.is_swa.begin(), c.is_swa.end(), [](bool b) { return b; }));
}

TEST(Phi3Config, WeightSourcesAreRowRangesOfTheFusedTensors) {
    const ModelConfig c = load_config(TestModel::from_preset("tiny-phi3"));
    const auto expect_rows = [&](const char* suffix, const char* tensor, int64_t first, int64_t count) {
        const WeightSource s = weight_source(c, 2, suffix);
        EXPECT_EQ(s.tensor, tensor) << suffix;
        ASSERT_TRUE(s.rows.has_value()) << suffix;
        EXPECT_EQ(s.rows->first, first) << suffix;
        EXPECT_EQ(s.rows->count, count) << suffix;
    };
    expect_rows("attn_q.weight", "blk.2.attn_qkv.weight", 0, kQ);
    expect_rows("attn_k.weight", "blk.2.attn_qkv.weight", kQ, kKv);
    expect_rows("attn_v.weight", "blk.2.attn_qkv.weight", kQ + kKv, kKv);
    expect_rows("ffn_gate.weight", "blk.2.ffn_up.weight", 0, kFf);
    expect_rows("ffn_up.weight", "blk.2.ffn_up.weight", kFf, kFf);
    const WeightSource down = weight_source(c, 2, "ffn_down.weight");
    EXPECT_EQ(down.tensor, "blk.2.ffn_down.weight");
    EXPECT_FALSE(down.rows.has_value());

    EXPECT_EQ(file_tensor_name(c, "blk.3.attn_v.weight"), "blk.3.attn_qkv.weight");
    EXPECT_EQ(file_tensor_name(c, "blk.0.ffn_gate.weight"), "blk.0.ffn_up.weight");
    EXPECT_EQ(file_tensor_name(c, "blk.0.attn_output.weight"), "blk.0.attn_output.weight");
    EXPECT_EQ(file_tensor_name(c, "token_embd.weight"), "token_embd.weight");
    EXPECT_EQ(file_tensor_name(c, "blk.9.attn_q.weight"), "blk.9.attn_q.weight");  // no such layer
}

TEST(Phi3Config, UnfusedArchitecturesMapEveryWeightToItself) {
    const ModelConfig c = load_config(TestModel::from_preset("tiny"));
    EXPECT_FALSE(c.fused_qkv || c.fused_gate_up);
    EXPECT_EQ(file_tensor_name(c, "blk.1.attn_k.weight"), "blk.1.attn_k.weight");
    EXPECT_EQ(file_tensor_name(c, "blk.1.ffn_gate.weight"), "blk.1.ffn_gate.weight");
    EXPECT_FALSE(weight_source(c, 1, "attn_q.weight").rows.has_value());
}

TEST(Phi3Config, MissingFusedQkvIsNamedWithItsShape) {
    TestModel m = TestModel::from_preset("tiny-phi3");
    m.erase_tensor("blk.1.attn_qkv.weight");
    expect_load_error<FormatError>(m, {"missing required tensor 'blk.1.attn_qkv.weight'", "[256, 512]",
                                       "n_head*head_dim_k + n_head_kv*(head_dim_k + head_dim_v)"});
}

TEST(Phi3Config, SeparateQkvTensorsAreNotPhi3sLayout) {
    TestModel m = TestModel::from_preset("tiny-phi3");
    m.erase_tensor("blk.0.attn_qkv.weight");
    m.add_tensor({"blk.0.attn_q.weight", GgmlType::Q4_K, {256, kQ}});
    m.add_tensor({"blk.0.attn_k.weight", GgmlType::Q4_K, {256, kKv}});
    m.add_tensor({"blk.0.attn_v.weight", GgmlType::Q4_K, {256, kKv}});
    expect_load_error<FormatError>(m, {"missing required tensor 'blk.0.attn_qkv.weight'"});
}

TEST(Phi3Config, FusedQkvOfTheWrongWidthNamesBothShapes) {
    TestModel m = TestModel::from_preset("tiny-phi3");
    m.reshape_tensor("blk.2.attn_qkv.weight", {256, 768});  // as if n_head_kv were 4
    expect_load_error<FormatError>(m, {"'blk.2.attn_qkv.weight'", "[256, 768]", "expected [256, 512]"});
}

TEST(Phi3Config, FfnUpWithoutItsGateHalfNamesBothShapes) {
    TestModel m = TestModel::from_preset("tiny-phi3");
    m.reshape_tensor("blk.3.ffn_up.weight", {256, kFf});  // a llama-style up, no gate rows
    expect_load_error<FormatError>(m, {"'blk.3.ffn_up.weight'", "[256, 768]", "expected [256, 1536]", "2*n_ff"});
}

TEST(Phi3Config, LongRopeFactorsAreRefusedByName) {
    for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
        TestModel m = TestModel::from_preset("tiny-phi3");
        m.add_tensor({name, GgmlType::F32, {32}});
        expect_load_error<UnsupportedError>(m, {name, "'longrope'", "supported: none, linear, yarn"});
    }
}

TEST(Phi3Config, QueryWidthMustBeNEmbd) {  // llama.cpp's attn_output is [n_embd, n_embd]
    TestModel m = TestModel::from_preset("tiny-phi3");
    m.set_arch("attention.key_length", GgufValue::u32(32));
    m.set_arch("attention.value_length", GgufValue::u32(32));
    expect_load_error<FormatError>(m, {"n_head 4 x head_dim 32 = 128 must equal n_embd 256 for phi3"});
}

}  // namespace
}  // namespace strata::testing
