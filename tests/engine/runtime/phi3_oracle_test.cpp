// Phi-3 against Hugging Face transformers: a tiny random Phi3ForCausalLM (fused qkv_proj and
// gate_up_proj, GQA, NEOX RoPE, a sliding window of 5 on every layer under 16-token prompts).
// make_tiny_phi3.py writes the GGUF with numpy and gguf as the llama.cpp converter lays it out;
// make_phi3_fixture.py ran transformers fp32 on the weights dequantized from that same file.
// Every position's logits must agree, through prefill and decode (the KV ring of the window).
#include <gtest/gtest.h>

#include <string>

#include "tests/engine/runtime/tiny_oracle.h"

namespace strata {
namespace {

struct Phi3Case {
    const char* type;  // f32, q8_0
    bool quantized_activations;
    double max_logit_error;
};

class Phi3Oracle : public ::testing::TestWithParam<Phi3Case> {};

TEST_P(Phi3Oracle, LogitsAgreeWithTransformers) {
    const Phi3Case& pc = GetParam();
    const std::string fixture = std::string("phi3_tiny_") + pc.type + ".json";
    const testing::TinyOracleResult r = testing::run_tiny_oracle(
        {.script = "make_tiny_phi3.py", .arch = "phi3", .type = pc.type, .fixture = fixture.c_str(),
         .quantized_activations = pc.quantized_activations});
    ASSERT_TRUE(r.error.empty()) << r.error;
    EXPECT_FALSE(r.is_moe);
    EXPECT_LE(r.prefill_err, pc.max_logit_error);
    EXPECT_LE(r.decode_err, pc.max_logit_error);
    EXPECT_GE(static_cast<double>(r.agree), 0.9 * static_cast<double>(r.positions));
}

// Bounds as dense_oracle_test's: 1e-3 on the f32 matmul path, 1.0 with 8-bit activations.
INSTANTIATE_TEST_SUITE_P(TinyPhi3, Phi3Oracle,
                         ::testing::Values(Phi3Case{"f32", false, 1e-3}, Phi3Case{"q8_0", false, 1e-3},
                                           Phi3Case{"q8_0", true, 1.0}),
                         [](const ::testing::TestParamInfo<Phi3Case>& info) {
                             return std::string(info.param.type) + (info.param.quantized_activations ? "_q8act" : "");
                         });

}  // namespace
}  // namespace strata
