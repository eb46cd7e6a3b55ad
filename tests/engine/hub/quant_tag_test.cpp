// Quantization tags and split parts read from file names as the hub names them.
#include "engine/hub/quant_tag.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(QuantTag, ReadsTheTagHubFileNamesCarry) {
    EXPECT_EQ(quant_tag_of("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"), "Q4_K_M");
    EXPECT_EQ(quant_tag_of("Llama-3.2-1B-Instruct-IQ4_XS.gguf"), "IQ4_XS");
    EXPECT_EQ(quant_tag_of("gemma-3-270m.Q8_0.gguf"), "Q8_0");
    EXPECT_EQ(quant_tag_of("model-bf16.gguf"), "BF16");
    EXPECT_EQ(quant_tag_of("Qwen3-30B-A3B-Q4_K_M-00001-of-00003.gguf"), "Q4_K_M");
    EXPECT_EQ(quant_tag_of("Mistral-7B-v0.1-Q4_0_4_4.gguf"), "Q4_0_4_4");
}

TEST(QuantTag, NamesWithoutATagGiveNone) {
    EXPECT_EQ(quant_tag_of("model.gguf"), "");
    EXPECT_EQ(quant_tag_of("qwen2.5-0.5b.gguf"), "");   // "5b" is not a tag, nor "Q"
    EXPECT_EQ(quant_tag_of("Q_.gguf"), "");
    EXPECT_EQ(quant_tag_of("q4_.gguf"), "");
}

TEST(QuantTag, SplitParts) {
    EXPECT_EQ(split_part_of("x-Q4_K_M-00002-of-00005.gguf").index, 2);
    EXPECT_EQ(split_part_of("x-Q4_K_M-00002-of-00005.gguf").count, 5);
    EXPECT_EQ(split_part_of("x-00000-of-00005.gguf").count, 0);  // parts count from 1
    EXPECT_EQ(split_part_of("x-00006-of-00005.gguf").count, 0);
    EXPECT_EQ(split_part_of("x-0000a-of-00005.gguf").count, 0);
    EXPECT_EQ(split_part_of("x.gguf").count, 0);
}

TEST(QuantTag, CaseInsensitiveHelpers) {
    EXPECT_TRUE(iequals("Q4_k_M", "q4_K_m"));
    EXPECT_FALSE(iequals("Q4_K_M", "Q4_K_S"));
    EXPECT_TRUE(istarts_with("Qwen/Repo:Q8_0", "qwen/repo"));
    EXPECT_TRUE(is_gguf_name("A.GGUF"));
    EXPECT_FALSE(is_gguf_name(".gguf"));
    EXPECT_EQ(gguf_stem("a.b.gguf"), "a.b");
}

}  // namespace
}  // namespace strata
