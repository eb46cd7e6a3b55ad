// Every preset, written with 2 layers, validates through ModelConfig::from_file, reads back
// the hyperparameters of its plan, and holds exactly the types the q4_k_m rules predict.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "engine/core/tensor_role.h"
#include "engine/gguf/model_file.h"
#include "engine/model/model_config.h"
#include "engine/synth/synth_model.h"
#include "engine/synth/synth_preset.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata::testing {
namespace {

// The Q4_K_M rule for one tensor, written out from docs/FORMATS.md §2.6 for this test; MoE files
// (llama-quant.cpp): the router unquantized, ffn_down_exps as ffn_down, and with exactly 8
// experts attn_k / attn_v Q8_0 and attn_output Q5_K; a fused attn_qkv (phi3) Q5_K.
GgmlType expected_q4_k_m(const TensorInfo& t, const ModelConfig& c) {
    if (t.n_dims < 2 || t.name.find(".ffn_gate_inp.") != std::string::npos) return GgmlType::F32;
    GgmlType type = GgmlType::Q4_K;
    int il = -1;
    if (t.name.rfind("blk.", 0) == 0) il = std::stoi(t.name.substr(4));
    bool more = il >= 0 && use_more_bits(il, c.n_layer);
    const bool eight = c.moe.n_expert == 8;
    if (t.name == "output.weight" || (t.name == "token_embd.weight" && c.tied_output)) {
        type = GgmlType::Q6_K;
    } else if (t.name.find(".attn_v.") != std::string::npos) {
        type = eight ? GgmlType::Q8_0 : more ? GgmlType::Q6_K : GgmlType::Q4_K;
    } else if (t.name.find(".attn_qkv.") != std::string::npos) {  // phi3's fused q/k/v
        type = GgmlType::Q5_K;
    } else if (t.name.find(".attn_k.") != std::string::npos && eight) {
        type = GgmlType::Q8_0;
    } else if (t.name.find(".attn_output.") != std::string::npos && eight) {
        type = GgmlType::Q5_K;
    } else if (t.name.find(".ffn_down.") != std::string::npos || t.name.find(".ffn_down_exps.") != std::string::npos) {
        type = more ? GgmlType::Q6_K : GgmlType::Q4_K;
    }
    if (t.ne[0] % 256 != 0) type = type == GgmlType::Q6_K ? GgmlType::Q8_0 : GgmlType::Q5_0;
    return type;
}

class PresetFile : public ::testing::TestWithParam<SynthPreset> {};

TEST_P(PresetFile, ValidatesWithThePlannedShapesAndTypes) {
    SynthOptions options;
    options.preset = GetParam().name;
    options.n_layer = 2;
    SynthPlan plan = plan_synth_model(options);
    ScratchFile scratch(std::string(GetParam().name) + ".gguf");

    auto start = std::chrono::steady_clock::now();
    SynthResult result = write_synth_model(options, scratch.path());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    RecordProperty("write_seconds", std::to_string(seconds));

    ModelFile file(scratch.path());
    EXPECT_EQ(file.total_file_bytes(), result.file_bytes);
    ModelConfig c = ModelConfig::from_file(file);
    const ModelConfig& want = plan.config;
    EXPECT_EQ(c.architecture, want.architecture);
    EXPECT_EQ(c.n_layer, 2);
    EXPECT_EQ(c.n_embd, want.n_embd);
    EXPECT_EQ(c.n_vocab, want.n_vocab);
    EXPECT_EQ(c.n_ctx_train, want.n_ctx_train);
    EXPECT_EQ(c.n_ff, want.n_ff);
    EXPECT_EQ(c.n_head, want.n_head);
    EXPECT_EQ(c.n_head_kv, want.n_head_kv);
    EXPECT_EQ(c.head_dim_k, want.head_dim_k);
    EXPECT_EQ(c.head_dim_v, want.head_dim_v);
    EXPECT_FLOAT_EQ(c.rms_eps, want.rms_eps);
    EXPECT_DOUBLE_EQ(c.rope.freq_base, want.rope.freq_base);
    EXPECT_EQ(c.rope.n_rot, want.rope.n_rot);
    EXPECT_EQ(c.rope.style, want.rope.style);
    EXPECT_EQ(c.sliding_window, want.sliding_window);
    EXPECT_EQ(c.is_swa, want.is_swa);
    EXPECT_FLOAT_EQ(c.attn_logit_softcap, want.attn_logit_softcap);
    EXPECT_FLOAT_EQ(c.final_logit_softcap, want.final_logit_softcap);
    EXPECT_EQ(c.tied_output, want.tied_output);
    EXPECT_EQ(c.has_qkv_bias, want.has_qkv_bias);
    EXPECT_EQ(c.has_qk_norm, want.has_qk_norm);
    EXPECT_EQ(c.activation, want.activation);
    EXPECT_EQ(c.file_type, 15);
    EXPECT_EQ(c.tokenizer.model, want.tokenizer.model);
    EXPECT_EQ(c.tokenizer.n_tokens, want.n_vocab);
    EXPECT_EQ(c.tokenizer.special.bos, want.tokenizer.special.bos);
    EXPECT_EQ(c.tokenizer.special.eos, want.tokenizer.special.eos);
    EXPECT_EQ(c.tokenizer.add_bos, want.tokenizer.add_bos);

    ASSERT_EQ(file.tensors().size(), plan.tensors.size());
    for (const TensorInfo& t : file.tensors()) {
        EXPECT_EQ(t.type, expected_q4_k_m(t, c)) << t.name;
        // Every tensor an architecture writes has a role (the planner and cost model key on it).
        EXPECT_NE(tensor_name_info(t.name).role, TensorRole::Other) << t.name;
    }
}

INSTANTIATE_TEST_SUITE_P(All, PresetFile, ::testing::ValuesIn(synth_presets()),
                         [](const auto& info) {
                             std::string name(info.param.name);
                             for (char& ch : name) {
                                 if (ch == '-' || ch == '.') ch = '_';
                             }
                             return name;
                         });

}  // namespace
}  // namespace strata::testing

namespace strata::testing {
namespace {

// Written files (not just the plan) carry Q6_K attn_v / ffn_down exactly in the layers of the
// fact sheet's tables for n = 26 and n = 32.
TEST(PresetFile, LayerTypesOnDiskMatchFactSheetTables) {
    const std::map<int, std::set<int>> tables = {
        {26, {0, 1, 2, 5, 8, 11, 14, 17, 20, 22, 23, 24, 25}},
        {32, {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}},
    };
    for (const auto& [n, q6_layers] : tables) {
        SynthOptions options;
        options.n_layer = n;
        ScratchFile scratch("tiny_" + std::to_string(n) + ".gguf");
        write_synth_model(options, scratch.path());
        ModelFile file(scratch.path());
        for (int il = 0; il < n; ++il) {
            std::string p = "blk." + std::to_string(il) + ".";
            GgmlType want = q6_layers.count(il) ? GgmlType::Q6_K : GgmlType::Q4_K;
            EXPECT_EQ(file.tensor(p + "ffn_down.weight").type, want) << "n=" << n << " " << il;
            EXPECT_EQ(file.tensor(p + "attn_v.weight").type, want) << "n=" << n << " " << il;
            EXPECT_EQ(file.tensor(p + "attn_q.weight").type, GgmlType::Q4_K);
        }
    }
}

}  // namespace
}  // namespace strata::testing
