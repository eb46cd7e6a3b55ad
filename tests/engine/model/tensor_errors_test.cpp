// The tensor table is checked against the architecture's spec: required tensors present,
// shapes as the hyperparameters imply (message: tensor, its shape, the expected shape), no
// blocks at or beyond block_count.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tests/engine/model/expect_error.h"

namespace strata::testing {
namespace {

TEST(TensorErrors, MissingRequiredTensor) {
    TestModel m = TestModel::from_preset("tiny");
    m.erase_tensor("blk.1.ffn_up.weight");
    expect_load_error<FormatError>(
        m, {"missing required tensor 'blk.1.ffn_up.weight'", "[n_embd, n_ff] = [256, 768]"});
}

TEST(TensorErrors, TypeWithoutKernelsNamesTensorTypeAndSupportedTypes) {
    TestModel m = TestModel::from_preset("tiny");
    m.erase_tensor("blk.1.ffn_up.weight");
    m.add_tensor({"blk.1.ffn_up.weight", GgmlType::Q1_0, {256, 768}});  // gguf-py knows it; Strata has no kernels
    expect_load_error<UnsupportedError>(
        m, {"'blk.1.ffn_up.weight'", "type q1_0", "supported: ", "q4_K", "iq2_xxs", "iq1_m", "tq2_0"});
}

TEST(TensorErrors, MissingTokenEmbedding) {
    TestModel m = TestModel::from_preset("tiny");
    m.erase_tensor("token_embd.weight");
    expect_load_error<FormatError>(m, {"'token_embd.weight'"});
}

TEST(TensorErrors, ShapeContradictsHyperparameters) {
    TestModel m = TestModel::from_preset("tiny");
    m.reshape_tensor("blk.2.attn_q.weight", {256, 128});
    expect_load_error<FormatError>(
        m, {"'blk.2.attn_q.weight'", "[256, 128]", "expected [256, 256]", "n_head*head_dim_k"});
}

TEST(TensorErrors, OutputWithWrongVocab) {
    TestModel m = TestModel::from_preset("tiny");
    m.reshape_tensor("output.weight", {256, 500});
    expect_load_error<FormatError>(m, {"'output.weight'", "[256, 500]", "[256, 512]"});
}

TEST(TensorErrors, ExtraDimensionIsAShapeError) {
    TestModel m = TestModel::from_preset("tiny");
    m.reshape_tensor("blk.0.attn_norm.weight", {256, 2});
    expect_load_error<FormatError>(m, {"'blk.0.attn_norm.weight'", "[256, 2]", "[256]"});
}

TEST(TensorErrors, BlockBeyondLayerCount) {
    TestModel m = TestModel::from_preset("tiny");
    m.add_tensor({"blk.4.attn_norm.weight", GgmlType::F32, {256}});
    expect_load_error<FormatError>(m, {"'blk.4.attn_norm.weight'", "block 4", "block_count is 4"});
}

TEST(TensorErrors, FewerLayersDeclaredThanPresent) {
    TestModel m = TestModel::from_preset("tiny");
    m.set_arch("block_count", GgufValue::u32(3));
    expect_load_error<FormatError>(m, {"'blk.3.", "block_count is 3"});
}

TEST(TensorErrors, Qwen2MissingBias) {
    TestModel m = TestModel::from_preset("tiny-qwen2");
    m.erase_tensor("blk.0.attn_k.bias");
    expect_load_error<FormatError>(m, {"missing required tensor 'blk.0.attn_k.bias'"});
}

TEST(TensorErrors, Qwen3MissingQNorm) {
    TestModel m = TestModel::from_preset("tiny-qwen3");
    m.erase_tensor("blk.3.attn_q_norm.weight");
    expect_load_error<FormatError>(m, {"'blk.3.attn_q_norm.weight'", "[head_dim_k] = [128]"});
}

TEST(TensorErrors, Gemma3MissingPostNorm) {
    TestModel m = TestModel::from_preset("tiny-gemma3");
    m.erase_tensor("blk.5.post_ffw_norm.weight");
    expect_load_error<FormatError>(m, {"'blk.5.post_ffw_norm.weight'"});
}

TEST(TensorErrors, OptionalTensorWithWrongShape) {
    TestModel m = TestModel::from_preset("tiny");
    m.add_tensor({"rope_freqs.weight", GgmlType::F32, {64}});
    expect_load_error<FormatError>(m, {"'rope_freqs.weight'", "[64]", "expected [32]"});
}

TEST(TensorErrors, TokenEmbeddingRowsMustMatchVocab) {
    TestModel m = TestModel::from_preset("tiny");
    m.reshape_tensor("token_embd.weight", {256, 513});
    expect_load_error<FormatError>(m, {"'token_embd.weight'", "[256, 513]", "[256, 512]"});
}

}  // namespace
}  // namespace strata::testing
