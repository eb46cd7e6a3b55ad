// Q4_K_M / Q8_0 / F16 type choice per tensor, checked against hand-written tables from
// docs/FORMATS.md §2.6 (not against the implementation's own formula).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "engine/core/error.h"
#include "engine/synth/synth_model.h"
#include "engine/synth/type_rules.h"

namespace strata {
namespace {

std::set<int> more_bits_layers(int n) {
    std::set<int> s;
    for (int i = 0; i < n; ++i) {
        if (use_more_bits(i, n)) s.insert(i);
    }
    return s;
}

TEST(TypeRules, UseMoreBitsMatchesFactSheetTables) {
    EXPECT_EQ(more_bits_layers(26), (std::set<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 22, 23, 24, 25}));
    EXPECT_EQ(more_bits_layers(32),
              (std::set<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
    std::set<int> n34 = more_bits_layers(34);
    for (int i : {0, 1, 2, 3, 6, 9, 27, 29, 30, 31, 32, 33})
        EXPECT_TRUE(n34.count(i)) << i;
    for (int i : {4, 5, 7, 8, 28})
        EXPECT_FALSE(n34.count(i)) << i;
    // The real Gemma 3 270M file: ffn_down Q6_K in exactly these 9 of 18 layers.
    EXPECT_EQ(more_bits_layers(18), (std::set<int>{0, 1, 4, 7, 10, 13, 15, 16, 17}));
}

std::map<std::string, GgmlType> planned_types(const std::string& preset, SynthType type,
                                              int64_t n_layer = 0) {
    SynthOptions o;
    o.preset = preset;
    o.type = type;
    o.n_layer = n_layer;
    std::map<std::string, GgmlType> types;
    for (const SynthTensor& t : plan_synth_model(o).tensors)
        types[t.spec.name] = t.type;
    return types;
}

TEST(TypeRules, Llama2_7bQ4KM) {
    auto t = planned_types("llama2-7b", SynthType::Q4_K_M);
    EXPECT_EQ(t.at("token_embd.weight"), GgmlType::Q4_K);  // untied: no output rule
    EXPECT_EQ(t.at("output.weight"), GgmlType::Q6_K);
    EXPECT_EQ(t.at("output_norm.weight"), GgmlType::F32);
    std::set<int> q6 = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
    for (int il = 0; il < 32; ++il) {
        std::string p = "blk." + std::to_string(il) + ".";
        GgmlType more = q6.count(il) ? GgmlType::Q6_K : GgmlType::Q4_K;
        EXPECT_EQ(t.at(p + "attn_v.weight"), more) << il;
        EXPECT_EQ(t.at(p + "ffn_down.weight"), more) << il;
        for (const char* name : {"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"}) {
            EXPECT_EQ(t.at(p + name + ".weight"), GgmlType::Q4_K) << p << name;
        }
        EXPECT_EQ(t.at(p + "attn_norm.weight"), GgmlType::F32);
        EXPECT_EQ(t.at(p + "ffn_norm.weight"), GgmlType::F32);
    }
    EXPECT_EQ(t.size(), 3u + 32u * 9u);
}

TEST(TypeRules, Gemma3_1bShapeFallbacks) {
    // n_embd 1152 is not a multiple of 256: rows of that width fall back to Q5_0 / Q8_0.
    auto t = planned_types("gemma3-1b", SynthType::Q4_K_M);
    EXPECT_EQ(t.count("output.weight"), 0u);               // tied
    EXPECT_EQ(t.at("token_embd.weight"), GgmlType::Q8_0);  // output rule Q6_K -> Q8_0
    std::set<int> q6 = {0, 1, 2, 5, 8, 11, 14, 17, 20, 22, 23, 24, 25};
    for (int il = 0; il < 26; ++il) {
        std::string p = "blk." + std::to_string(il) + ".";
        bool more = q6.count(il) > 0;
        EXPECT_EQ(t.at(p + "attn_q.weight"), GgmlType::Q5_0);
        EXPECT_EQ(t.at(p + "attn_k.weight"), GgmlType::Q5_0);
        EXPECT_EQ(t.at(p + "attn_v.weight"), more ? GgmlType::Q8_0 : GgmlType::Q5_0) << il;
        EXPECT_EQ(t.at(p + "attn_output.weight"), GgmlType::Q4_K);  // ne0 = 1024
        EXPECT_EQ(t.at(p + "ffn_gate.weight"), GgmlType::Q5_0);
        EXPECT_EQ(t.at(p + "ffn_up.weight"), GgmlType::Q5_0);
        EXPECT_EQ(t.at(p + "ffn_down.weight"), more ? GgmlType::Q6_K : GgmlType::Q4_K) << il;
        EXPECT_EQ(t.at(p + "attn_q_norm.weight"), GgmlType::F32);
        EXPECT_EQ(t.at(p + "post_ffw_norm.weight"), GgmlType::F32);
    }
}

TEST(TypeRules, Gemma3_270mMatchesTheRealFileMix) {
    // Counts of the real gemma-3-270m Q4_K_M file: F32 109, Q5_0 81, Q4_K 27, Q8_0 10, Q6_K 9.
    std::map<GgmlType, int> count;
    for (const auto& [name, type] : planned_types("gemma3-270m", SynthType::Q4_K_M)) {
        ++count[type];
    }
    EXPECT_EQ(count[GgmlType::F32], 109);
    EXPECT_EQ(count[GgmlType::Q5_0], 81);
    EXPECT_EQ(count[GgmlType::Q4_K], 27);
    EXPECT_EQ(count[GgmlType::Q8_0], 10);
    EXPECT_EQ(count[GgmlType::Q6_K], 9);
}

TEST(TypeRules, Llama2_70bAttnVGetsQ5K) {
    auto t = planned_types("llama2-70b", SynthType::Q4_K_M);
    EXPECT_EQ(t.at("blk.0.attn_v.weight"), GgmlType::Q6_K);   // i < n/8
    EXPECT_EQ(t.at("blk.10.attn_v.weight"), GgmlType::Q5_K);  // 70B bump of Q4_K
    EXPECT_EQ(t.at("blk.12.attn_v.weight"), GgmlType::Q6_K);  // (12 - 10) % 3 == 2
    EXPECT_EQ(t.at("blk.10.ffn_down.weight"), GgmlType::Q4_K);
    EXPECT_EQ(t.at("blk.10.attn_q.weight"), GgmlType::Q4_K);
}

TEST(TypeRules, Q8_0AndF16) {
    for (auto [type, want] :
         {std::pair{SynthType::Q8_0, GgmlType::Q8_0}, std::pair{SynthType::F16, GgmlType::F16}}) {
        for (const auto& [name, t] : planned_types("tiny-gemma3", type)) {
            bool is_vector = name.find("norm") != std::string::npos;
            EXPECT_EQ(t, is_vector ? GgmlType::F32 : want) << name;
        }
    }
}

TEST(TypeRules, QwenBiasesStayF32) {
    auto t = planned_types("tiny-qwen2", SynthType::Q4_K_M);
    EXPECT_EQ(t.at("blk.0.attn_q.bias"), GgmlType::F32);
    EXPECT_EQ(t.at("blk.3.attn_v.bias"), GgmlType::F32);
}

TEST(TypeRules, ParseAndFileType) {
    EXPECT_EQ(parse_synth_type("Q4_K_M"), SynthType::Q4_K_M);
    EXPECT_EQ(parse_synth_type("f16"), SynthType::F16);
    EXPECT_THROW(parse_synth_type("q3_k_s"), ArgumentError);
    EXPECT_EQ(static_cast<int>(synth_file_type(SynthType::Q4_K_M)), 15);
    EXPECT_EQ(static_cast<int>(synth_file_type(SynthType::Q8_0)), 7);
    EXPECT_EQ(static_cast<int>(synth_file_type(SynthType::F16)), 1);
}

TEST(TypeRules, Mixtral8x7bQ4KM) {
    // llama.cpp's 8-expert rules (llama-quant.cpp): attn_k and attn_v Q8_0, attn_output Q5_K;
    // ffn_down_exps follows ffn_down's use_more_bits rule; the router is never quantized.
    auto t = planned_types("mixtral-8x7b", SynthType::Q4_K_M);
    std::set<int> q6 = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
    for (int il = 0; il < 32; ++il) {
        std::string p = "blk." + std::to_string(il) + ".";
        EXPECT_EQ(t.at(p + "attn_k.weight"), GgmlType::Q8_0) << il;
        EXPECT_EQ(t.at(p + "attn_v.weight"), GgmlType::Q8_0) << il;
        EXPECT_EQ(t.at(p + "attn_q.weight"), GgmlType::Q4_K) << il;
        EXPECT_EQ(t.at(p + "attn_output.weight"), GgmlType::Q5_K) << il;
        EXPECT_EQ(t.at(p + "ffn_gate_inp.weight"), GgmlType::F32) << il;
        EXPECT_EQ(t.at(p + "ffn_gate_exps.weight"), GgmlType::Q4_K) << il;
        EXPECT_EQ(t.at(p + "ffn_up_exps.weight"), GgmlType::Q4_K) << il;
        EXPECT_EQ(t.at(p + "ffn_down_exps.weight"), q6.count(il) ? GgmlType::Q6_K : GgmlType::Q4_K) << il;
        EXPECT_EQ(t.count(p + "ffn_gate.weight"), 0u);
    }
}

TEST(TypeRules, Qwen3_30bA3bQ4KM) {
    // 128 experts: no 8-expert bumps; attn_v by use_more_bits (48 layers).
    auto t = planned_types("qwen3-30b-a3b", SynthType::Q4_K_M);
    EXPECT_EQ(t.at("blk.0.attn_v.weight"), GgmlType::Q6_K);
    EXPECT_EQ(t.at("blk.7.attn_v.weight"), GgmlType::Q4_K);  // 48/8 = 6 <= 7, (7-6)%3 != 2
    EXPECT_EQ(t.at("blk.7.attn_k.weight"), GgmlType::Q4_K);
    EXPECT_EQ(t.at("blk.7.attn_output.weight"), GgmlType::Q4_K);
    EXPECT_EQ(t.at("blk.7.ffn_down_exps.weight"), GgmlType::Q4_K);
    EXPECT_EQ(t.at("blk.8.ffn_down_exps.weight"), GgmlType::Q6_K);  // (8-6)%3 == 2
    EXPECT_EQ(t.at("blk.7.ffn_gate_inp.weight"), GgmlType::F32);
    EXPECT_EQ(t.at("blk.7.attn_q_norm.weight"), GgmlType::F32);
}

}  // namespace
}  // namespace strata
