// ModelConfig::from_file on valid models: every architecture's preset reads back with the
// hyperparameters it was written with, defaults and per-layer arrays work.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/model/arch_spec.h"
#include "engine/model/model_config.h"
#include "tests/engine/model/test_model_builder.h"

namespace strata::testing {
namespace {

TEST(ModelConfig, TinyLlamaReadsBack) {
    ModelConfig c = load_config(TestModel::from_preset("tiny"));
    EXPECT_EQ(c.architecture, "llama");
    EXPECT_EQ(c.n_layer, 4);
    EXPECT_EQ(c.n_embd, 256);
    EXPECT_EQ(c.n_vocab, 512);
    EXPECT_EQ(c.n_ctx_train, 2048);
    EXPECT_EQ(c.n_head, std::vector<int64_t>(4, 4));
    EXPECT_EQ(c.n_head_kv, std::vector<int64_t>(4, 2));
    EXPECT_EQ(c.n_ff, std::vector<int64_t>(4, 768));
    EXPECT_EQ(c.head_dim_k, 64);  // default n_embd / n_head
    EXPECT_EQ(c.head_dim_v, 64);
    EXPECT_EQ(c.n_gqa(0), 2);
    EXPECT_EQ(c.n_embd_k_gqa(3), 128);
    EXPECT_FLOAT_EQ(c.rms_eps, 1e-5);
    EXPECT_EQ(c.rope.style, RopeStyle::Norm);
    EXPECT_EQ(c.rope.n_rot, 64);
    EXPECT_DOUBLE_EQ(c.rope.freq_base, 10000.0);
    EXPECT_EQ(c.rope.scaling, RopeScaling::None);
    EXPECT_DOUBLE_EQ(c.kq_scale, 1.0 / 8.0);
    EXPECT_EQ(c.activation, Activation::Silu);
    EXPECT_FALSE(c.tied_output);
    EXPECT_FALSE(c.has_qkv_bias);
    EXPECT_FALSE(c.has_qk_norm);
    EXPECT_EQ(c.sliding_window, 0);
    EXPECT_EQ(c.is_swa, std::vector<bool>(4, false));
    EXPECT_EQ(c.file_type, 15);
    EXPECT_EQ(c.tokenizer.model, "llama");
    EXPECT_EQ(c.tokenizer.n_tokens, 512);
    EXPECT_EQ(c.tokenizer.special.bos, 1);
    EXPECT_EQ(c.tokenizer.special.eos, 2);
    EXPECT_EQ(c.tokenizer.special.unk, 0);
    EXPECT_TRUE(c.tokenizer.add_bos);
    EXPECT_TRUE(c.tokenizer.add_space_prefix);  // SPM default
    EXPECT_FALSE(c.tokenizer.has_chat_template);
}

TEST(ModelConfig, TinyQwen2HasBiasesAndNeox) {
    ModelConfig c = load_config(TestModel::from_preset("tiny-qwen2"));
    EXPECT_EQ(c.architecture, "qwen2");
    EXPECT_TRUE(c.has_qkv_bias);
    EXPECT_EQ(c.rope.style, RopeStyle::Neox);
    EXPECT_EQ(c.tokenizer.model, "gpt2");
    EXPECT_EQ(c.tokenizer.pre, "qwen2");
    EXPECT_GT(c.tokenizer.n_merges, 0);
    EXPECT_FALSE(c.tokenizer.add_bos);
    EXPECT_TRUE(c.tokenizer.has_chat_template);
}

TEST(ModelConfig, TinyQwen3HeadDimWiderThanEmbd) {
    ModelConfig c = load_config(TestModel::from_preset("tiny-qwen3"));
    EXPECT_EQ(c.head_dim_k, 128);
    EXPECT_EQ(c.n_embd_q(0), 512);  // wider than n_embd 256
    EXPECT_TRUE(c.has_qk_norm);
    EXPECT_DOUBLE_EQ(c.kq_scale, 1.0 / std::sqrt(128.0));
}

TEST(ModelConfig, TinyGemma3SlidingWindowAndTied) {
    ModelConfig c = load_config(TestModel::from_preset("tiny-gemma3"));
    EXPECT_EQ(c.architecture, "gemma3");
    EXPECT_TRUE(c.tied_output);
    EXPECT_TRUE(c.has_post_norms);
    EXPECT_TRUE(c.has_qk_norm);
    EXPECT_EQ(c.activation, Activation::GeluTanh);
    EXPECT_EQ(c.sliding_window, 64);
    EXPECT_EQ(c.is_swa, (std::vector<bool>{true, true, true, true, true, false}));
    EXPECT_DOUBLE_EQ(c.embd_scale, std::sqrt(384.0));
    EXPECT_DOUBLE_EQ(c.rope.freq_base, 1e6);
    EXPECT_DOUBLE_EQ(c.rope.freq_base_swa, 10000.0);  // default
    EXPECT_FALSE(c.tokenizer.add_space_prefix);
}

TEST(ModelConfig, Gemma3SlidingWindowPatternKey) {
    TestModel m = TestModel::from_preset("tiny-gemma3");
    m.set_arch("attention.sliding_window_pattern", GgufValue::u32(3));
    EXPECT_EQ(load_config(m).is_swa, (std::vector<bool>{true, true, false, true, true, false}));
    m.set_arch("attention.sliding_window_pattern",
               GgufValue::bools({false, true, false, true, false, true}));
    EXPECT_EQ(load_config(m).is_swa, (std::vector<bool>{false, true, false, true, false, true}));
}

TEST(ModelConfig, PerLayerArrays) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("feed_forward_length", GgufValue::i32s({768, 512, 768, 1024}));
    m.set_arch("attention.head_count_kv", GgufValue::i32s({2, 4, 1, 2}));
    m.reshape_tensor("blk.1.ffn_gate.weight", {256, 512});
    m.reshape_tensor("blk.1.ffn_up.weight", {256, 512});
    m.reshape_tensor("blk.1.ffn_down.weight", {512, 256});
    m.reshape_tensor("blk.3.ffn_gate.weight", {256, 1024});
    m.reshape_tensor("blk.3.ffn_up.weight", {256, 1024});
    m.reshape_tensor("blk.3.ffn_down.weight", {1024, 256});
    m.reshape_tensor("blk.1.attn_k.weight", {256, 256});
    m.reshape_tensor("blk.1.attn_v.weight", {256, 256});
    m.reshape_tensor("blk.2.attn_k.weight", {256, 64});
    m.reshape_tensor("blk.2.attn_v.weight", {256, 64});
    ModelConfig c = load_config(m);
    EXPECT_EQ(c.n_ff, (std::vector<int64_t>{768, 512, 768, 1024}));
    EXPECT_EQ(c.n_head_kv, (std::vector<int64_t>{2, 4, 1, 2}));
    EXPECT_EQ(c.n_gqa(2), 4);
}

TEST(ModelConfig, AnyIntegerTypeIsAccepted) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("context_length", GgufValue::u64(2048));
    m.set_arch("block_count", GgufValue::i32(4));
    m.set_arch("attention.layer_norm_rms_epsilon", GgufValue::f64(1e-6));
    ModelConfig c = load_config(m);
    EXPECT_EQ(c.n_ctx_train, 2048);
    EXPECT_DOUBLE_EQ(c.rms_eps, 1e-6);
}

TEST(ModelConfig, OptionalTensorsSetFlags) {
    TestModel m = TestModel::from_preset("tiny");
    m.erase_tensor("output.weight");
    m.add_tensor({"rope_freqs.weight", GgmlType::F32, {32}});
    for (int il = 0; il < 4; ++il) {
        std::string p = "blk." + std::to_string(il) + ".";
        m.add_tensor({p + "attn_q.bias", GgmlType::F32, {256}});
        m.add_tensor({p + "attn_k.bias", GgmlType::F32, {128}});
        m.add_tensor({p + "attn_v.bias", GgmlType::F32, {128}});
    }
    ModelConfig c = load_config(m);
    EXPECT_TRUE(c.tied_output);
    EXPECT_TRUE(c.rope.has_freq_factors);
    EXPECT_TRUE(c.has_qkv_bias);
}

TEST(ModelConfig, RopeScalingAndOverrides) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("rope.scaling.type", GgufValue::string("linear"));
    m.set_arch("rope.scaling.factor", GgufValue::f32(4.0f));
    m.set_arch("attention.scale", GgufValue::f32(0.5f));
    ModelConfig c = load_config(m);
    EXPECT_EQ(c.rope.scaling, RopeScaling::Linear);
    EXPECT_DOUBLE_EQ(c.rope.scaling_factor, 4.0);
    EXPECT_DOUBLE_EQ(c.kq_scale, 0.5);
    m.set_arch("rope.scaling.factor", GgufValue::f32(0.0f));  // 0 means no scaling
    EXPECT_EQ(load_config(m).rope.scaling, RopeScaling::None);
}

TEST(ModelConfig, YarnKeysAndDefaults) {
    TestModel m = TestModel::from_preset("tiny-qwen2");
    m.set_arch("rope.scaling.type", GgufValue::string("yarn"));
    m.set_arch("rope.scaling.factor", GgufValue::f32(4.0f));
    m.set_arch("rope.scaling.original_context_length", GgufValue::u32(32768));
    ModelConfig c = load_config(m);
    EXPECT_EQ(c.rope.scaling, RopeScaling::Yarn);
    EXPECT_DOUBLE_EQ(c.rope.scaling_factor, 4.0);
    EXPECT_EQ(c.rope.n_ctx_orig, 32768);
    EXPECT_DOUBLE_EQ(c.rope.yarn_ext_factor, 1.0);  // llama.cpp's defaults
    EXPECT_DOUBLE_EQ(c.rope.yarn_attn_factor, 1.0);
    EXPECT_DOUBLE_EQ(c.rope.yarn_beta_fast, 32.0);
    EXPECT_DOUBLE_EQ(c.rope.yarn_beta_slow, 1.0);
    m.set_arch("rope.scaling.yarn_beta_fast", GgufValue::f32(16.0f));
    m.set_arch("rope.scaling.yarn_beta_slow", GgufValue::f32(2.0f));
    m.set_arch("rope.scaling.yarn_attn_factor", GgufValue::f32(0.5f));
    c = load_config(m);
    EXPECT_DOUBLE_EQ(c.rope.yarn_beta_fast, 16.0);
    EXPECT_DOUBLE_EQ(c.rope.yarn_beta_slow, 2.0);
    EXPECT_DOUBLE_EQ(c.rope.yarn_attn_factor, 0.5);
}

TEST(ModelConfig, ExpectedTensorsFollowTheArchitecture) {
    ModelConfig c = load_config(TestModel::from_preset("tiny-gemma3"));
    std::vector<TensorSpec> specs = expected_tensors(c);
    // token_embd + 6 blocks x 13 + output_norm + output (optional, not in config: tied)
    ASSERT_EQ(specs.size(), 1u + 6u * 13u + 2u);
    EXPECT_EQ(specs.front().name, "token_embd.weight");
    EXPECT_EQ(specs.back().name, "output.weight");
    EXPECT_FALSE(specs.back().required);
    EXPECT_FALSE(specs.back().in_config);
    EXPECT_EQ(specs[1].name, "blk.0.attn_norm.weight");
}

TEST(ModelConfig, SupportedArchitectures) {
    std::vector<std::string_view> names = supported_architectures();
    EXPECT_EQ(names, (std::vector<std::string_view>{"gemma2", "gemma3", "llama", "phi3", "qwen2", "qwen2moe", "qwen3", "qwen3moe"}));
    EXPECT_EQ(find_arch("mamba"), nullptr);
    EXPECT_EQ(arch_spec("qwen3").name, "qwen3");
}

}  // namespace
}  // namespace strata::testing
