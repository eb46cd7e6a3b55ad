// ModelConfig::from_file rejects bad hyperparameters with a FormatError or UnsupportedError
// naming the key and the values: unknown architecture, missing keys, wrong key types, absurd
// sizes, inconsistent heads, bad eps / RoPE values, per-layer arrays of the wrong length.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/engine/model/expect_error.h"

namespace strata::testing {
namespace {

TEST(HparamErrors, UnknownArchitectureListsSupported) {
    TestModel m = TestModel::from_preset("tiny");
    m.set("general.architecture", GgufValue::string("mamba"));
    expect_load_error<UnsupportedError>(m, {"'mamba'", "gemma3, llama, phi3, qwen2, qwen2moe, qwen3, qwen3moe"});
}

TEST(HparamErrors, MissingArchitecture) {
    TestModel m = TestModel::from_preset("tiny");
    m.erase("general.architecture");
    expect_load_error<FormatError>(m, {"missing required key 'general.architecture'"});
}

class MissingKey : public ::testing::TestWithParam<const char*> {};

TEST_P(MissingKey, IsNamed) {
    TestModel m = TestModel::from_preset("tiny");
    m.erase(GetParam());
    expect_load_error<FormatError>(m, {"missing required key", GetParam()});
}

INSTANTIATE_TEST_SUITE_P(Required, MissingKey,
                         ::testing::Values("llama.context_length", "llama.embedding_length",
                                           "llama.block_count", "llama.feed_forward_length",
                                           "llama.attention.head_count",
                                           "llama.attention.layer_norm_rms_epsilon",
                                           "tokenizer.ggml.model", "tokenizer.ggml.tokens"));

struct WrongType {
    const char* key;
    GgufValue value;
    const char* stored;  // type named in the message
};

class WrongKeyType : public ::testing::TestWithParam<WrongType> {};

TEST_P(WrongKeyType, NamesKeyAndTypes) {
    TestModel m = TestModel::from_preset("tiny");
    m.set(GetParam().key, GetParam().value);
    expect_load_error<FormatError>(m, {GetParam().key, "has type", GetParam().stored});
}

INSTANTIATE_TEST_SUITE_P(
    Keys, WrongKeyType,
    ::testing::Values(
        WrongType{"llama.block_count", GgufValue::string("4"), "str"},
        WrongType{"llama.embedding_length", GgufValue::f32(256.0f), "f32"},
        WrongType{"llama.attention.layer_norm_rms_epsilon", GgufValue::string("1e-5"), "str"},
        WrongType{"llama.attention.head_count", GgufValue::f32s({4, 4, 4, 4}), "array"},
        WrongType{"tokenizer.ggml.add_bos_token", GgufValue::u32(1), "u32"},
        WrongType{"tokenizer.ggml.tokens", GgufValue::i32s({1, 2, 3}), "array"},
        WrongType{"general.architecture", GgufValue::u32(7), "u32"}));

struct Absurd {
    const char* suffix;  // key under "llama."
    GgufValue value;
    const char* fragment;  // value or limit in the message
};

class AbsurdValue : public ::testing::TestWithParam<Absurd> {};

TEST_P(AbsurdValue, IsRejectedWithTheValue) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch(GetParam().suffix, GetParam().value);
    expect_load_error<FormatError>(m, {GetParam().suffix, GetParam().fragment});
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, AbsurdValue,
    ::testing::Values(Absurd{"embedding_length", GgufValue::u32(0), "is 0"},
                      Absurd{"embedding_length", GgufValue::u32((1u << 20) + 1), "1048577"},
                      Absurd{"block_count", GgufValue::u32(0), "is 0"},
                      Absurd{"block_count", GgufValue::u32(5000), "1..4096"},
                      Absurd{"context_length", GgufValue::i32(-5), "is -5"},
                      Absurd{"feed_forward_length", GgufValue::u32(0), "is 0"},
                      Absurd{"attention.head_count", GgufValue::u32(0), "is 0"},
                      Absurd{"attention.head_count_kv", GgufValue::u32(0), "is 0"},
                      Absurd{"attention.key_length", GgufValue::u32(0), "is 0"},
                      Absurd{"attention.layer_norm_rms_epsilon", GgufValue::f32(0.0f), "is 0"},
                      Absurd{"attention.layer_norm_rms_epsilon", GgufValue::f32(2.0f), "is 2"},
                      Absurd{"attention.layer_norm_rms_epsilon", GgufValue::f32(-1e-5f), "eps"},
                      Absurd{"rope.freq_base", GgufValue::f32(0.0f), "is 0"},
                      Absurd{"rope.freq_base", GgufValue::f32(-10000.0f), "is -10000"},
                      Absurd{"rope.dimension_count", GgufValue::u32(63), "even"},
                      Absurd{"rope.dimension_count", GgufValue::u32(32), "whole head"}));

TEST(HparamErrors, HeadsNotDivisibleByKvHeads) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("attention.head_count_kv", GgufValue::u32(3));
    expect_load_error<FormatError>(m, {"n_head 4", "n_head_kv 3"});
}

TEST(HparamErrors, Qwen2HeadDimMustMatchEmbd) {
    TestModel m = TestModel::from_preset("tiny-qwen2");
    m.set_arch("attention.key_length", GgufValue::u32(32));
    m.set_arch("attention.value_length", GgufValue::u32(32));
    expect_load_error<FormatError>(m, {"head_dim 32", "= 128", "n_embd 256", "qwen2"});
}

TEST(HparamErrors, EmbdNotMultipleOfHeadsWithoutKeyLength) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("attention.head_count", GgufValue::u32(3));
    m.set_arch("attention.head_count_kv", GgufValue::u32(3));
    expect_load_error<FormatError>(m, {"n_embd 256", "n_head 3"});
}

TEST(HparamErrors, PerLayerArrayOfWrongLength) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("attention.head_count", GgufValue::i32s({4, 4, 4}));
    expect_load_error<FormatError>(m, {"llama.attention.head_count", "3 entries", "(4)"});
}

TEST(HparamErrors, PerLayerValueZero) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("feed_forward_length", GgufValue::i32s({768, 768, 0, 768}));
    expect_load_error<FormatError>(m, {"feed_forward_length (layer 2)", "is 0"});
}

TEST(HparamErrors, SlidingWindowPatternArrayOfWrongLength) {
    TestModel m = TestModel::from_preset("tiny-gemma3");
    m.set_arch("attention.sliding_window_pattern", GgufValue::bools({true, false}));
    expect_load_error<FormatError>(m, {"sliding_window_pattern", "2 entries", "(6)"});
}

TEST(HparamErrors, VocabularyTooLarge) {
    TestModel m = TestModel::from_preset("tiny");
    m.set("tokenizer.ggml.model", GgufValue::string("none"));
    m.set_arch("vocab_size", GgufValue::u32((1u << 24) + 1));
    expect_load_error<FormatError>(m, {"vocabulary size", "16777217"});
}

TEST(HparamErrors, ExpertsOnADenseOnlyArchitecture) {
    TestModel m = TestModel::from_preset("tiny-qwen3");
    m.set_arch("expert_count", GgufValue::u32(8));
    expect_load_error<UnsupportedError>(
        m, {"qwen3 has no mixture-of-experts variant", "'qwen3.expert_count' is 8", "llama, qwen2moe, qwen3moe"});
}

TEST(HparamErrors, UnknownRopeScaling) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("rope.scaling.type", GgufValue::string("wobble"));
    expect_load_error<UnsupportedError>(m, {"rope.scaling.type", "'wobble'"});
}

TEST(HparamErrors, LongRopeIsRefusedByName) {
    // Phi-3's long-context scaling would otherwise run as no scaling and write wrong text.
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("rope.scaling.type", GgufValue::string("longrope"));
    m.set_arch("rope.scaling.factor", GgufValue::f32(32.0f));
    expect_load_error<UnsupportedError>(m, {"rope.scaling.type", "'longrope'", "not supported", "none, linear, yarn"});
}

TEST(HparamErrors, BadYarnParameters) {
    TestModel m = TestModel::from_preset("tiny-qwen2");
    m.set_arch("rope.scaling.type", GgufValue::string("yarn"));
    m.set_arch("rope.scaling.factor", GgufValue::f32(4.0f));
    m.set_arch("rope.scaling.yarn_beta_fast", GgufValue::f32(0.5f));
    expect_load_error<FormatError>(m, {"rope.scaling.yarn_beta_fast", "0.5", "yarn_beta_slow"});
    m.set_arch("rope.scaling.yarn_beta_fast", GgufValue::f32(32.0f));
    m.set_arch("rope.scaling.yarn_ext_factor", GgufValue::f32(2.0f));
    expect_load_error<FormatError>(m, {"rope.scaling.yarn_ext_factor", "2", "0..1"});
}

TEST(HparamErrors, NegativeSoftcap) {
    TestModel m = TestModel::from_preset("tiny-gemma3");
    m.set_arch("final_logit_softcapping", GgufValue::f32(-30.0f));
    expect_load_error<FormatError>(m, {"final_logit_softcapping", "-30"});
}

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

TEST(HparamErrors, SlidingWindowPatternZero) {
    TestModel m = TestModel::from_preset("tiny-gemma3");
    m.set_arch("attention.sliding_window_pattern", GgufValue::u32(0));
    expect_load_error<FormatError>(m, {"sliding_window_pattern", "is 0"});
}

}  // namespace
}  // namespace strata::testing
