// The real default model (Gemma 3 270M Q4_K_M, STRATA_DEFAULT_MODEL) validates and reads
// back with its published hyperparameters. Skipped when the variable is unset.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "engine/gguf/model_file.h"
#include "engine/model/model_config.h"
#include "engine/model/model_summary.h"

namespace strata {
namespace {

TEST(DefaultModel, Gemma3_270mValidates) {
    const char* path = std::getenv("STRATA_DEFAULT_MODEL");
    if (path == nullptr || *path == '\0') GTEST_SKIP() << "STRATA_DEFAULT_MODEL is not set";
    ModelFile file(path);
    ModelConfig c = ModelConfig::from_file(file);

    EXPECT_EQ(c.architecture, "gemma3");
    EXPECT_EQ(c.n_layer, 18);
    EXPECT_EQ(c.n_embd, 640);
    EXPECT_EQ(c.n_head, std::vector<int64_t>(18, 4));
    EXPECT_EQ(c.n_head_kv, std::vector<int64_t>(18, 1));
    EXPECT_EQ(c.head_dim_k, 256);
    EXPECT_EQ(c.head_dim_v, 256);
    EXPECT_EQ(c.n_ff, std::vector<int64_t>(18, 2048));
    EXPECT_EQ(c.n_vocab, 262144);
    EXPECT_EQ(c.n_ctx_train, 32768);
    EXPECT_EQ(c.sliding_window, 512);
    for (int il = 0; il < 18; ++il)
        EXPECT_EQ(c.is_swa[il], il % 6 != 5) << "layer " << il;
    EXPECT_TRUE(c.tied_output);
    EXPECT_TRUE(c.has_qk_norm);
    EXPECT_TRUE(c.has_post_norms);
    EXPECT_FALSE(c.has_qkv_bias);
    EXPECT_EQ(c.rope.style, RopeStyle::Neox);
    EXPECT_EQ(c.rope.n_rot, 256);
    EXPECT_DOUBLE_EQ(c.rope.freq_base, 1e6);
    EXPECT_DOUBLE_EQ(c.rope.freq_base_swa, 10000.0);
    EXPECT_EQ(c.rope.scaling, RopeScaling::None);
    EXPECT_NEAR(c.rms_eps, 1e-6, 1e-12);
    EXPECT_DOUBLE_EQ(c.kq_scale, 1.0 / 16.0);
    EXPECT_DOUBLE_EQ(c.embd_scale, std::sqrt(640.0));
    EXPECT_EQ(c.activation, Activation::GeluTanh);
    EXPECT_EQ(c.final_logit_softcap, 0.0);
    EXPECT_EQ(c.file_type, 15);

    EXPECT_EQ(c.tokenizer.model, "llama");
    EXPECT_EQ(c.tokenizer.n_tokens, 262144);
    EXPECT_EQ(c.tokenizer.special.bos, 2);
    EXPECT_EQ(c.tokenizer.special.eos, 1);
    EXPECT_EQ(c.tokenizer.special.unk, 3);
    EXPECT_EQ(c.tokenizer.special.pad, 0);
    EXPECT_TRUE(c.tokenizer.add_bos);
    EXPECT_FALSE(c.tokenizer.add_space_prefix);
    EXPECT_FALSE(c.tokenizer.has_chat_template);

    ModelSummary s = summarize_tensors(file.tensors());
    EXPECT_EQ(s.n_tensors, 236);
    EXPECT_EQ(s.n_params, 268098176);
}

}  // namespace
}  // namespace strata
