// classify_tensors (offload/tensor_class.h): the one grouping the built-in placement and the cost
// model rate tensors by, on dense, tied and MoE tables of the shapes llama.cpp's files use.
#include <gtest/gtest.h>

#include <string>

#include "offload/tensor_class.h"
#include "tests/offload/placement_test_util.h"

namespace strata {
namespace {

// The class of the tensor named `name` (fails the test when the table has none).
TensorClass class_of(const TensorTable& table, const TensorClasses& c, const std::string& name) {
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        if (table.tensors[i].name == name) return c.of[i];
    }
    ADD_FAILURE() << "no tensor " << name;
    return TensorClass::GlobalOther;
}

int index_of(const TensorTable& table, const std::string& name) {
    for (size_t i = 0; i < table.tensors.size(); ++i) {
        if (table.tensors[i].name == name) return static_cast<int>(i);
    }
    return -1;
}

TEST(TensorClass, DenseTableByName) {
    test::LlamaShape s;
    s.n_layer = 3;
    const TensorTable table = test::make_llama_table(s);
    const TensorClasses c = classify_tensors(table);
    ASSERT_EQ(c.of.size(), table.tensors.size());
    EXPECT_EQ(class_of(table, c, "token_embd.weight"), TensorClass::TokenEmbd);
    EXPECT_EQ(class_of(table, c, "output.weight"), TensorClass::Output);
    EXPECT_EQ(class_of(table, c, "output_norm.weight"), TensorClass::Small);
    EXPECT_EQ(class_of(table, c, "blk.2.attn_norm.weight"), TensorClass::Small);
    EXPECT_EQ(class_of(table, c, "blk.1.attn_v.weight"), TensorClass::Attn);
    EXPECT_EQ(class_of(table, c, "blk.0.ffn_down.weight"), TensorClass::Ffn);
    EXPECT_EQ(c.output, index_of(table, "output.weight"));
    EXPECT_EQ(c.token_embd, index_of(table, "token_embd.weight"));
    EXPECT_EQ(c.output_matrix(), c.output);
    ASSERT_EQ(c.ffn.size(), 3u);
    for (size_t l = 0; l < c.ffn.size(); ++l) {
        ASSERT_TRUE(c.ffn[l].has_value()) << l;
        EXPECT_EQ(c.ffn[l]->n_ff, s.n_ff);
    }
    EXPECT_EQ(c.layer[static_cast<size_t>(index_of(table, "blk.2.attn_q.weight"))], 2);
    EXPECT_EQ(c.layer[static_cast<size_t>(index_of(table, "output.weight"))], -1);
}

TEST(TensorClass, TiedEmbeddingIsTheOutput) {
    test::LlamaShape s;
    s.tied_output = true;
    const TensorTable table = test::make_llama_table(s);
    const TensorClasses c = classify_tensors(table);
    EXPECT_EQ(class_of(table, c, "token_embd.weight"), TensorClass::Output);
    EXPECT_EQ(c.output, -1);
    EXPECT_EQ(c.output_matrix(), index_of(table, "token_embd.weight"));
}

TEST(TensorClass, MoeExpertsAndRouterAreLayerOther) {
    test::LlamaShape s;
    const TensorTable table = test::make_moe_table(s, 8, 2);
    const TensorClasses c = classify_tensors(table);
    EXPECT_EQ(class_of(table, c, "blk.1.ffn_up_exps.weight"), TensorClass::LayerOther);
    EXPECT_EQ(class_of(table, c, "blk.1.ffn_gate_inp.weight"), TensorClass::LayerOther);
    EXPECT_FALSE(c.ffn[1].has_value());  // no splittable FFN in a MoE layer
}

TEST(TensorClass, BlocksPastTheLayerCountAreGlobal) {
    test::LlamaShape s;
    TensorTable table = test::make_llama_table(s);
    table.tensors.push_back(test::make_entry("blk.7.attn_q.weight", GgmlType::Q4_K, s.n_embd, s.n_embd));
    table.tensors.push_back(test::make_entry("rope_freqs.weight", GgmlType::F32, 64, 1));
    table.tensors.push_back(test::make_entry("mystery.weight", GgmlType::Q4_K, s.n_embd, 4));
    const TensorClasses c = classify_tensors(table);
    EXPECT_EQ(class_of(table, c, "blk.7.attn_q.weight"), TensorClass::GlobalOther);
    EXPECT_EQ(c.layer[static_cast<size_t>(index_of(table, "blk.7.attn_q.weight"))], -1);
    EXPECT_EQ(class_of(table, c, "rope_freqs.weight"), TensorClass::Small);
    EXPECT_EQ(class_of(table, c, "mystery.weight"), TensorClass::GlobalOther);
}

}  // namespace
}  // namespace strata
