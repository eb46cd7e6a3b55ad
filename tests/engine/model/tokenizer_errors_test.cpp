// Tokenizer keys are checked against the vocabulary: arrays of vocabulary length, special
// token ids inside it, BPE with merges.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "tests/engine/model/expect_error.h"

namespace strata::testing {
namespace {

TEST(TokenizerErrors, ScoresShorterThanVocab) {
    TestModel m = TestModel::from_preset("tiny");
    m.set("tokenizer.ggml.scores", GgufValue::f32s(std::vector<float>(511, 0.0f)));
    expect_load_error<FormatError>(m, {"tokenizer.ggml.scores", "511 entries", "512 tokens"});
}

TEST(TokenizerErrors, TokenTypesLongerThanVocab) {
    TestModel m = TestModel::from_preset("tiny");
    m.set("tokenizer.ggml.token_type", GgufValue::i32s(std::vector<int32_t>(600, 1)));
    expect_load_error<FormatError>(m, {"tokenizer.ggml.token_type", "600 entries", "512 tokens"});
}

TEST(TokenizerErrors, ScoresOfWrongType) {
    TestModel m = TestModel::from_preset("tiny");
    m.set("tokenizer.ggml.scores", GgufValue::i32s(std::vector<int32_t>(512, 0)));
    expect_load_error<FormatError>(m, {"tokenizer.ggml.scores", "has type", "array of float"});
}

TEST(TokenizerErrors, VocabSizeKeyDisagreesWithTokens) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("vocab_size", GgufValue::u32(32000));
    expect_load_error<FormatError>(m, {"512 entries", "llama.vocab_size' is 32000"});
}

TEST(TokenizerErrors, TokenListShorterThanEmbedding) {
    TestModel m = TestModel::from_preset("tiny");
    m.erase_arch("vocab_size");
    m.set("tokenizer.ggml.tokens", GgufValue::strings(std::vector<std::string>(500, "x")));
    m.set("tokenizer.ggml.scores", GgufValue::f32s(std::vector<float>(500, 0.0f)));
    m.set("tokenizer.ggml.token_type", GgufValue::i32s(std::vector<int32_t>(500, 1)));
    expect_load_error<FormatError>(m, {"'token_embd.weight'", "[256, 512]", "[256, 500]"});
}

TEST(TokenizerErrors, BosOutsideVocabulary) {
    TestModel m = TestModel::from_preset("tiny");
    m.set("tokenizer.ggml.bos_token_id", GgufValue::u32(512));
    expect_load_error<FormatError>(m, {"tokenizer.ggml.bos_token_id", "is 512", "512 tokens"});
}

TEST(TokenizerErrors, NegativeEos) {
    TestModel m = TestModel::from_preset("tiny");
    m.set("tokenizer.ggml.eos_token_id", GgufValue::i32(-1));
    expect_load_error<FormatError>(m, {"tokenizer.ggml.eos_token_id", "is -1"});
}

TEST(TokenizerErrors, PaddingOutsideVocabulary) {
    TestModel m = TestModel::from_preset("tiny-qwen2");
    m.set("tokenizer.ggml.padding_token_id", GgufValue::u32(151643));
    expect_load_error<FormatError>(m, {"padding_token_id", "151643"});
}

TEST(TokenizerErrors, BpeWithoutMerges) {
    TestModel m = TestModel::from_preset("tiny-qwen2");
    m.erase("tokenizer.ggml.merges");
    expect_load_error<FormatError>(m, {"gpt2", "tokenizer.ggml.merges"});
}

TEST(TokenizerErrors, NoVocabModelTakesEmbeddingRows) {
    TestModel m = TestModel::from_preset("tiny");
    m.set("tokenizer.ggml.model", GgufValue::string("none"));
    m.erase_arch("vocab_size");
    ModelConfig c = load_config(m);
    EXPECT_EQ(c.n_vocab, 512);
    EXPECT_EQ(c.tokenizer.n_tokens, 0);
}

}  // namespace
}  // namespace strata::testing
