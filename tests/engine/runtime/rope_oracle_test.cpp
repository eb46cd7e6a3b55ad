// RoPE scaling as GGUF files state it, against Hugging Face transformers at positions up to 4x
// past the original context: tiny random Llama models with Llama 3.1's frequency rescaling
// (rope_freqs.weight) and with linear scaling, and a tiny Qwen2 with YaRN (make_tiny_rope.py
// writes the GGUF with numpy and gguf; make_rope_fixture.py ran transformers fp32 on the weights
// read back from that same file). The logits must agree through a one-batch prefill and through
// token-by-token decode. Past the original context transformers without the scaling differs
// from the fixture by `unscaled_diff` (recorded with it): the error must be far below that, so
// the comparison shows the scaling itself.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/model/rope_overrides.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

std::string source(const std::string& rel) { return std::string(STRATA_SOURCE_DIR) + "/" + rel; }

// Runs make_tiny_rope.py (plain: no scaling keys); returns the sha256 it prints ("" on failure).
std::string make_model(const std::string& which, const std::string& path, bool plain = false) {
    const std::string cmd = "cd " + source("tests/engine/runtime") + " && python3 make_tiny_rope.py " + which + " " +
                            path + (plain ? " --plain" : "");
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return "";
    char buf[128] = {};
    std::string out = fgets(buf, sizeof buf, p) != nullptr ? buf : "";
    if (pclose(p) != 0) return "";
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

struct Errors {
    double inside = 0, past = 0;  // max |Δlogit| at positions < and >= the original context
};

nlohmann::json fixture(const std::string& which) {
    std::ifstream in(source("tests/engine/runtime/fixtures/rope_tiny_" + which + ".json"));
    return in ? nlohmann::json::parse(in) : nlohmann::json();
}

// The model's logits (one-batch prefill and token-by-token decode) against the fixture's.
void expect_fixture_logits(const Model& model, const nlohmann::json& fx, const std::string& which) {
    cpu::CpuBackendOptions options;
    options.quantize_activations = false;  // f32 weights: the reference-precision path
    cpu::CpuBackend cpu(options);
    const PlacedModel placed(model, cpu);
    LayerProgram program(placed);
    const int64_t n_vocab = program.n_vocab();
    const std::vector<int32_t> ids = fx["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> rows = fx["rows"].get<std::vector<int32_t>>();
    const auto n = static_cast<int64_t>(ids.size());
    const int64_t orig = fx["original_context"].get<int64_t>();
    ASSERT_GE(n, 4 * orig);

    // Prefill: the whole prompt in one batch, logits of the fixture's rows.
    KvCache kv(model.config(), n, GgmlType::F32, placed.kv_backends(), n);
    std::vector<float> hidden, prefill(rows.size() * static_cast<size_t>(n_vocab));
    program.forward(ids, kv, rows, hidden);
    program.logits(hidden.data(), static_cast<int64_t>(rows.size()), prefill.data());
    // Decode: one token at a time.
    KvCache kv1(model.config(), n, GgmlType::F32, placed.kv_backends(), 1);
    std::vector<float> step(static_cast<size_t>(n_vocab));
    const int32_t row0 = 0;
    Errors pre, dec;
    size_t next = 0;
    int64_t agree = 0;
    for (int64_t t = 0; t < n && next < rows.size(); ++t) {
        program.forward({&ids[static_cast<size_t>(t)], 1}, kv1, {&row0, 1}, hidden);
        if (t != rows[next]) continue;
        program.logits(hidden.data(), 1, step.data());
        const auto& ref = fx["logits"][next];
        const float* p = prefill.data() + next * static_cast<size_t>(n_vocab);
        int32_t best = 0;
        for (int64_t v = 0; v < n_vocab; ++v) {
            const double r = ref[static_cast<size_t>(v)].get<double>();
            double& pe = t < orig ? pre.inside : pre.past;
            double& de = t < orig ? dec.inside : dec.past;
            pe = std::max(pe, std::fabs(p[v] - r));
            de = std::max(de, std::fabs(step[static_cast<size_t>(v)] - r));
            if (r > ref[static_cast<size_t>(best)].get<double>()) best = static_cast<int32_t>(v);
        }
        agree += std::max_element(p, p + n_vocab) - p == best;
        ++next;
    }
    ASSERT_EQ(next, rows.size());
    std::printf("[ rope     ] %s: max |dlogit| prefill %.5f / %.5f, decode %.5f / %.5f (inside / past %lld); top-1 %lld/%zu\n",
                which.c_str(), pre.inside, pre.past, dec.inside, dec.past, static_cast<long long>(orig),
                static_cast<long long>(agree), rows.size());
    // f32 path: float rounding only (the MoE and dense oracles measure ~1e-5 at this size).
    EXPECT_LE(std::max(pre.inside, pre.past), 1e-3);
    EXPECT_LE(std::max(dec.inside, dec.past), 1e-3);
    EXPECT_EQ(agree, static_cast<int64_t>(rows.size()));
    const double unscaled = fx["unscaled_diff"].get<double>();
    EXPECT_GE(unscaled, 0.5) << "the fixture's model does not depend on its RoPE scaling";
    EXPECT_LE(std::max(pre.past, dec.past) * 100, unscaled);
}

class RopeOracle : public ::testing::TestWithParam<const char*> {};

TEST_P(RopeOracle, LogitsAgreeWithTransformersPastTheOriginalContext) {
    const std::string which = GetParam();
    const nlohmann::json fx = fixture(which);
    ASSERT_FALSE(fx.is_null()) << "missing fixture for " << which;
    testing::ScratchFile file("rope_" + which + ".gguf");
    const std::string digest = make_model(which, file.path());
    ASSERT_FALSE(digest.empty()) << "make_tiny_rope.py failed (needs python3 with numpy and gguf)";
    ASSERT_EQ(digest, fx["sha256"].get<std::string>())
        << "make_tiny_rope.py wrote another file than the fixture was made from (numpy or gguf changed?)";
    const Model model(file.path());
    const RopeConfig& rope = model.config().rope;
    EXPECT_EQ(rope.scaling, which == "linear" ? RopeScaling::Linear : which == "yarn" ? RopeScaling::Yarn : RopeScaling::None);
    EXPECT_EQ(rope.has_freq_factors, which == "llama3");
    expect_fixture_logits(model, fx, which);
}

INSTANTIATE_TEST_SUITE_P(TinyModels, RopeOracle, ::testing::Values("llama3", "linear", "yarn"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

// The same weights in a file without scaling keys (context: the original 32 positions), the
// scaling given as the command line gives it (--rope-scaling linear|yarn --rope-scale 4): the
// same logits as transformers with the scaling. Without the overrides the file runs unscaled,
// far from the fixture past the original context.
class RopeOverrideOracle : public ::testing::TestWithParam<const char*> {};

TEST_P(RopeOverrideOracle, CommandLineScalingMatchesTransformers) {
    const std::string which = GetParam();
    const nlohmann::json fx = fixture(which);
    ASSERT_FALSE(fx.is_null()) << "missing fixture for " << which;
    testing::ScratchFile file("rope_plain_" + which + ".gguf");
    ASSERT_FALSE(make_model(which, file.path(), /*plain=*/true).empty()) << "make_tiny_rope.py --plain failed";
    const Model plain(file.path());
    EXPECT_EQ(plain.config().rope.scaling, RopeScaling::None);
    EXPECT_EQ(rope_context(plain.config()), 32);
    RopeOverrides o;
    o.scaling = which == "yarn" ? RopeScaling::Yarn : RopeScaling::Linear;
    o.scale = 4.0;
    const Model model(file.path(), o);
    EXPECT_EQ(model.config().rope.scaling, *o.scaling);
    EXPECT_EQ(rope_context(model.config()), 128);  // the original 32 positions times 4
    expect_fixture_logits(model, fx, which);
}

INSTANTIATE_TEST_SUITE_P(TinyModels, RopeOverrideOracle, ::testing::Values("linear", "yarn"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace strata
