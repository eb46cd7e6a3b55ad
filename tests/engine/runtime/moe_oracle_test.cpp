// Mixture-of-experts models against Hugging Face transformers: tiny random Qwen3-MoE, Qwen2-MoE
// (shared expert) and Mixtral models (make_tiny_moe.py writes the GGUF with numpy and gguf;
// make_moe_fixture.py ran transformers fp32 on the weights dequantized from that same file). The logits of every
// position must agree, through prefill (tokens grouped by expert) and token-by-token decode
// (only the selected experts run).
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
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

struct MoeCase {
    const char* arch;  // make_tiny_moe.py's model: qwen3moe, qwen2moe, mixtral
    const char* type;  // f32, f16, q8_0
    bool quantized_activations;
    double max_logit_error;
};

std::string source(const std::string& rel) { return std::string(STRATA_SOURCE_DIR) + "/" + rel; }

// Runs make_tiny_moe.py; returns the sha256 it prints.
std::string make_model(const MoeCase& mc, const std::string& path) {
    const std::string cmd = "python3 " + source("tests/engine/runtime/make_tiny_moe.py") + " " + mc.arch + " " +
                            mc.type + " " + path;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return "";
    char buf[128] = {};
    std::string out = fgets(buf, sizeof buf, p) != nullptr ? buf : "";
    const int rc = pclose(p);
    if (rc != 0) return "";
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

class MoeOracle : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeOracle, LogitsAgreeWithTransformers) {
    const MoeCase& mc = GetParam();
    std::ifstream in(source(std::string("tests/engine/runtime/fixtures/moe_tiny_") + mc.arch + "_" +
                            (std::string(mc.type) == "f16" ? "f32" : mc.type) + ".json"));
    ASSERT_TRUE(in) << "missing fixture for " << mc.arch;
    const nlohmann::json fx = nlohmann::json::parse(in);
    testing::ScratchFile file(std::string("moe_") + mc.arch + "_" + mc.type + ".gguf");
    const std::string digest = make_model(mc, file.path());
    ASSERT_FALSE(digest.empty()) << "make_tiny_moe.py failed (needs python3 with numpy and gguf)";
    // The f16 file is checked against the f32 fixture (f16 rounding of weights moves logits a little).
    if (std::string(mc.type) != "f16") {
        ASSERT_EQ(digest, fx["sha256"].get<std::string>())
            << "make_tiny_moe.py wrote another file than the fixture was made from (numpy or gguf changed?)";
    }
    const Model model(file.path());
    ASSERT_TRUE(model.config().is_moe());
    cpu::CpuBackendOptions options;
    options.quantize_activations = mc.quantized_activations;
    cpu::CpuBackend cpu(options);
    const PlacedModel placed(model, cpu);
    LayerProgram program(placed);
    const int64_t n_vocab = program.n_vocab();

    double prefill_err = 0, decode_err = 0;
    int64_t agree = 0, positions = 0;
    for (const auto& p : fx["prompts"]) {
        const std::vector<int32_t> ids = p["ids"].get<std::vector<int32_t>>();
        const auto n = static_cast<int64_t>(ids.size());
        // Prefill: the whole prompt in one batch.
        KvCache kv(model.config(), n, GgmlType::F32, placed.kv_backends());
        std::vector<int32_t> rows(static_cast<size_t>(n));
        std::iota(rows.begin(), rows.end(), 0);
        std::vector<float> hidden, logits(static_cast<size_t>(n * n_vocab));
        program.forward(ids, kv, rows, hidden);
        program.logits(hidden.data(), n, logits.data());
        // Decode: one token at a time.
        KvCache kv1(model.config(), n, GgmlType::F32, placed.kv_backends());
        std::vector<float> step(static_cast<size_t>(n_vocab));
        const int32_t row0 = 0;
        for (int64_t t = 0; t < n; ++t) {
            program.forward({&ids[static_cast<size_t>(t)], 1}, kv1, {&row0, 1}, hidden);
            program.logits(hidden.data(), 1, step.data());
            const auto& ref = p["logits"][static_cast<size_t>(t)];
            const float* pre = logits.data() + t * n_vocab;
            int32_t best = 0;
            for (int64_t v = 0; v < n_vocab; ++v) {
                const double r = ref[static_cast<size_t>(v)].get<double>();
                prefill_err = std::max(prefill_err, std::fabs(pre[v] - r));
                decode_err = std::max(decode_err, std::fabs(step[static_cast<size_t>(v)] - r));
                if (r > ref[static_cast<size_t>(best)].get<double>()) best = static_cast<int32_t>(v);
            }
            agree += std::max_element(pre, pre + n_vocab) - pre == best;
            ++positions;
        }
    }
    std::printf("[ moe      ] %s %s%s: max |dlogit| prefill %.5f, decode %.5f; top-1 %lld/%lld\n", mc.arch, mc.type,
                mc.quantized_activations ? " q8-activations" : "", prefill_err, decode_err,
                static_cast<long long>(agree), static_cast<long long>(positions));
    EXPECT_LE(prefill_err, mc.max_logit_error);
    EXPECT_LE(decode_err, mc.max_logit_error);
    EXPECT_GE(static_cast<double>(agree), 0.9 * static_cast<double>(positions));
}

// Bounds: the f32 path (reference precision) as the other oracle cases (1e-3; measured 1e-5 on
// logits of magnitude ~10); f16 weights against the f32 fixture measured 6e-3. The fast path's
// 8-bit activations get the real models' fast-path bound (logits_oracle_test: 5.0): measured
// 0.3 (mixtral) and 2.6 (qwen3moe), where a token whose router logits nearly tie may take
// another expert (the qwen3moe fixture has a router gap of 0.009 between 2nd and 3rd).
INSTANTIATE_TEST_SUITE_P(
    TinyModels, MoeOracle,
    ::testing::Values(MoeCase{"qwen3moe", "f32", false, 1e-3}, MoeCase{"mixtral", "f32", false, 1e-3},
                      MoeCase{"qwen2moe", "f32", false, 1e-3}, MoeCase{"qwen2moe", "q8_0", false, 1e-3},
                      MoeCase{"qwen3moe", "q8_0", false, 1e-3}, MoeCase{"mixtral", "q8_0", false, 1e-3},
                      MoeCase{"qwen3moe", "f16", false, 0.05}, MoeCase{"mixtral", "q8_0", true, 5.0},
                      MoeCase{"qwen3moe", "q8_0", true, 5.0}),
    [](const ::testing::TestParamInfo<MoeCase>& info) {
        return std::string(info.param.arch) + "_" + info.param.type + (info.param.quantized_activations ? "_q8act" : "");
    });

}  // namespace
}  // namespace strata
