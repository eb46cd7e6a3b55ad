// RopeOverrides (engine/model/rope_overrides.h): the command line's RoPE flags over a config's,
// llama.cpp's meanings, and a clear refusal naming the flag for each bad combination. The
// logits under overrides are checked against transformers in tests/engine/runtime/rope_oracle_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "engine/core/error.h"
#include "engine/model/rope_overrides.h"

namespace strata {
namespace {

ModelConfig plain_config() {
    ModelConfig c;
    c.n_ctx_train = 4096;
    c.rope.freq_base = 10000.0;
    c.rope.n_ctx_orig = 4096;
    return c;
}

ModelConfig yarn_config() {
    ModelConfig c = plain_config();
    c.n_ctx_train = 32768;
    c.rope.scaling = RopeScaling::Yarn;
    c.rope.scaling_factor = 4.0;
    c.rope.n_ctx_orig = 32768;
    return c;
}

// The ArgumentError's message of applying o to c ("" when it applies).
std::string refusal(const RopeOverrides& o, ModelConfig c) {
    try {
        apply_rope_overrides(o, c);
    } catch (const ArgumentError& e) {
        return e.what();
    }
    return "";
}

TEST(RopeOverrides, NoneGivenChangesNothing) {
    ModelConfig c = yarn_config();
    EXPECT_FALSE(RopeOverrides{}.any());
    apply_rope_overrides({}, c);
    EXPECT_EQ(c.rope.scaling, RopeScaling::Yarn);
    EXPECT_EQ(c.rope.scaling_factor, 4.0);
    EXPECT_EQ(rope_context(c), 4 * 32768);
}

TEST(RopeOverrides, AScaleOnAPlainModelIsLinearAsInLlamaCpp) {
    ModelConfig c = plain_config();
    RopeOverrides o;
    o.scale = 2.0;
    apply_rope_overrides(o, c);
    EXPECT_EQ(c.rope.scaling, RopeScaling::Linear);
    EXPECT_EQ(c.rope.scaling_factor, 2.0);
    EXPECT_EQ(rope_context(c), 8192);

    ModelConfig f = plain_config();
    RopeOverrides fs;
    fs.freq_scale = 0.25;  // = --rope-scale 4
    apply_rope_overrides(fs, f);
    EXPECT_EQ(f.rope.scaling, RopeScaling::Linear);
    EXPECT_EQ(f.rope.scaling_factor, 4.0);
}

TEST(RopeOverrides, YarnFlagsAndFreqBaseReplaceTheFiles) {
    ModelConfig c = plain_config();
    RopeOverrides o;
    o.scaling = RopeScaling::Yarn;
    o.scale = 4.0;
    o.yarn_orig_ctx = 2048;
    o.yarn_beta_fast = 16.0;
    o.yarn_ext_factor = -1.0;  // llama.cpp: negative means 1
    o.freq_base = 500000.0;
    apply_rope_overrides(o, c);
    EXPECT_EQ(c.rope.scaling, RopeScaling::Yarn);
    EXPECT_EQ(c.rope.scaling_factor, 4.0);
    EXPECT_EQ(c.rope.n_ctx_orig, 2048);
    EXPECT_EQ(c.rope.yarn_beta_fast, 16.0);
    EXPECT_EQ(c.rope.yarn_ext_factor, 1.0);
    EXPECT_EQ(c.rope.freq_base, 500000.0);
    EXPECT_EQ(c.rope.freq_base_swa, 10000.0);  // sliding-window layers keep theirs
    EXPECT_EQ(rope_context(c), 8192);          // the original 2048 positions x 4, past the training 4096
}

TEST(RopeOverrides, TheRunsRopeIsDescribedAsApplied) {
    ModelConfig c = yarn_config();
    RopeOverrides o;
    o.freq_base = 1000000.0;
    o.yarn_beta_fast = 16.0;
    EXPECT_TRUE(o.any());
    apply_rope_overrides(o, c);
    EXPECT_EQ(describe_rope(c.rope, c.n_ctx_train), "yarn x4 over 32768 positions, base 1000000 (ext 1, attn 1, beta 16/1)");
    ModelConfig p = plain_config();
    RopeOverrides half;
    half.freq_scale = 0.25;
    apply_rope_overrides(half, p);
    EXPECT_EQ(describe_rope(p.rope, p.n_ctx_train), "linear x4, base 10000");
    RopeOverrides none;
    none.scaling = RopeScaling::None;
    ModelConfig y = yarn_config();
    apply_rope_overrides(none, y);
    EXPECT_EQ(describe_rope(y.rope, y.n_ctx_train), "none, base 10000");
}

TEST(RopeOverrides, NoneDropsTheFilesScaling) {
    ModelConfig c = yarn_config();
    RopeOverrides o;
    o.scaling = RopeScaling::None;
    apply_rope_overrides(o, c);
    EXPECT_EQ(c.rope.scaling, RopeScaling::None);
    EXPECT_EQ(c.rope.scaling_factor, 1.0);
    EXPECT_EQ(rope_context(c), 32768);
}

TEST(RopeOverrides, BadValuesAreRefusedNamingTheFlag) {
    RopeOverrides zero;
    zero.scale = 0.0;
    EXPECT_NE(refusal(zero, plain_config()).find("--rope-scale"), std::string::npos);
    RopeOverrides nan_base;
    nan_base.freq_base = std::numeric_limits<double>::quiet_NaN();
    EXPECT_NE(refusal(nan_base, plain_config()).find("--rope-freq-base"), std::string::npos);
    RopeOverrides both;
    both.scale = 2.0;
    both.freq_scale = 0.5;
    EXPECT_NE(refusal(both, plain_config()).find("give one"), std::string::npos);
    RopeOverrides yarn_only;
    yarn_only.yarn_orig_ctx = 1024;
    EXPECT_NE(refusal(yarn_only, plain_config()).find("--rope-scaling yarn"), std::string::npos);
    RopeOverrides none_scaled;
    none_scaled.scaling = RopeScaling::None;
    none_scaled.scale = 2.0;
    EXPECT_NE(refusal(none_scaled, plain_config()).find("--rope-scaling none"), std::string::npos);
    ModelConfig longrope = plain_config();
    longrope.rope.scaling = RopeScaling::LongRope;
    RopeOverrides over_longrope;
    over_longrope.scaling = RopeScaling::Linear;
    EXPECT_NE(refusal(over_longrope, longrope).find("longrope"), std::string::npos);
    EXPECT_THROW(parse_rope_scaling("longrope"), ArgumentError);
    EXPECT_THROW(parse_rope_scaling("ntk"), ArgumentError);
    EXPECT_EQ(parse_rope_scaling("yarn"), RopeScaling::Yarn);
}

}  // namespace
}  // namespace strata
