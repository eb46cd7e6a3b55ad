// The whole forward pass against Hugging Face transformers (fp32 on weights dequantized from
// the same GGUF): top-1 agreement at every position, logit error on HF's top-20, and a
// greedy continuation (up to 64 tokens). Fixtures come from make_logits_fixture.py. Real models (the
// default Gemma 3 and Qwen2.5) and synthetic ones of every architecture (llama, qwen2, qwen3,
// gemma3 shapes; random weights, so the logits are checked, not the words).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "engine/gguf/model_file.h"
#include "engine/model/model_config.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_weights.h"
#include "engine/runtime/placed_model.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/synth/scratch_file.h"
#if STRATA_HAVE_CUDA
#include "kernels_cuda/cuda_backend.h"
#endif

namespace strata {
namespace {

struct OracleCase {
    const char* model_env;  // environment variable holding the model path, or
    const char* synth;      // a `strata synth` preset written here (q4_k_m, seed 42)
    const char* fixture;    // file under tests/engine/runtime/fixtures
    GgmlType kv_type;
    double min_top1;        // fraction of positions whose argmax matches HF
    bool greedy_must_match;  // also run (and require) the 64-token greedy continuation
    // false: the f32 dequantize path (reference precision: checks the layer program); true:
    // the default fast path, whose 8-bit activations move logits (as llama.cpp's CPU path does).
    bool quantized_activations = false;
    double max_logit_error = 1e-3;  // bound on |dlogit| over HF's top-20
    // Greedy tokens checked per prompt (of the fixture's 64): the real models' f32 path costs
    // ~0.4 s a token on a 2-core CI machine, and the first 24 exercise the cached decode as well.
    size_t greedy_tokens = 64;
};

std::string fixture_path(const char* name) {
    return std::string(STRATA_SOURCE_DIR) + "/tests/engine/runtime/fixtures/" + name;
}

constexpr float kTieGap = 1e-3f;  // logits closer than this are a tie for greedy decoding

int32_t argmax(const float* v, int64_t n) {
    return static_cast<int32_t>(std::max_element(v, v + n) - v);
}

// What the prompts of one case add up to.
struct OracleTally {
    int64_t positions = 0, agree = 0, greedy_total = 0, greedy_same = 0, greedy_ties = 0;
    double max_err = 0;
};

// One fixture prompt: its logits at every position against transformers' top-k, then (where the
// case asks) the greedy continuation from the cached prompt against transformers' tokens.
void score_prompt(LayerProgram& program, const ModelConfig& config, const PlacedModel& placed, const OracleCase& oc,
                  const nlohmann::json& p, OracleTally& out) {
    const int64_t n_vocab = program.n_vocab();
    const std::vector<int32_t> ids = p["ids"].get<std::vector<int32_t>>();
    const std::vector<int32_t> greedy = p["greedy"].get<std::vector<int32_t>>();
    const int64_t n = static_cast<int64_t>(ids.size());
    KvCache kv(config, n + static_cast<int64_t>(greedy.size()) + 1, oc.kv_type, placed.kv_backends());
    std::vector<int32_t> rows(static_cast<size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    std::vector<float> hidden, logits(static_cast<size_t>(n_vocab * n));
    program.forward(ids, kv, rows, hidden);
    program.logits(hidden.data(), n, logits.data());
    for (int64_t t = 0; t < n; ++t) {
        const float* row = logits.data() + t * n_vocab;
        const auto& top_ids = p["top_ids"][static_cast<size_t>(t)];
        const auto& top_logits = p["top_logits"][static_cast<size_t>(t)];
        out.agree += argmax(row, n_vocab) == top_ids[0].get<int32_t>();
        for (size_t j = 0; j < top_ids.size(); ++j) {
            const double d = std::fabs(row[top_ids[j].get<int32_t>()] - top_logits[j].get<double>());
            out.max_err = std::max(out.max_err, d);
        }
        ++out.positions;
    }
    if (!oc.greedy_must_match) return;
    // Greedy continuation from the cached prompt.
    int32_t next = argmax(logits.data() + (n - 1) * n_vocab, n_vocab);
    const int32_t last_row = 0;
    const size_t n_greedy = std::min(greedy.size(), oc.greedy_tokens);
    for (size_t i = 0; i < n_greedy; ++i) {
        ++out.greedy_total;
        if (next != greedy[i]) {
            // A different argmax is only acceptable at a tie within float noise (random
            // synthetic weights give flat logits); the continuations part ways there.
            const float gap = logits[static_cast<size_t>(next)] - logits[static_cast<size_t>(greedy[i])];
            if (gap < kTieGap) {
                ++out.greedy_ties;
                out.greedy_total += static_cast<int64_t>(n_greedy - i - 1);
                out.greedy_same += static_cast<int64_t>(n_greedy - i);
            }
            break;
        }
        ++out.greedy_same;
        const int32_t tok = next;
        program.forward({&tok, 1}, kv, {&last_row, 1}, hidden);
        program.logits(hidden.data(), 1, logits.data());
        next = argmax(logits.data(), n_vocab);
    }
}

class LogitsOracle : public ::testing::TestWithParam<OracleCase> {};

TEST_P(LogitsOracle, MatchesTransformers) {
    const OracleCase& oc = GetParam();
    std::ifstream in(fixture_path(oc.fixture));
    ASSERT_TRUE(in) << "missing fixture " << oc.fixture;
    const nlohmann::json fx = nlohmann::json::parse(in);

    std::string model_path;
    testing::ScratchFile scratch(std::string(oc.fixture) + ".gguf");
    if (oc.synth) {
        // The fixture was made from exactly this file (same preset, type and seed).
        SynthOptions options;
        options.preset = oc.synth;
        options.seed = 42;
        write_synth_model(options, scratch.path());
        model_path = scratch.path();
    } else {
        const char* env = std::getenv(oc.model_env);
        if (!env) GTEST_SKIP() << oc.model_env << " is not set (scripts/test.sh sets it)";
        model_path = env;
    }
    const Model model(model_path);
    // STRATA_ORACLE_BACKEND=cuda runs the same cases with every weight on the GPU.
    std::unique_ptr<Backend> backend;
    const char* which = std::getenv("STRATA_ORACLE_BACKEND");
    const bool on_gpu = which != nullptr && std::string(which) == "cuda";
    if (on_gpu) {
#if STRATA_HAVE_CUDA
        cuda::CudaBackendOptions o;
        o.quantize_activations = oc.quantized_activations;
        backend = std::make_unique<cuda::CudaBackend>(o);
#else
        GTEST_SKIP() << "built without CUDA";
#endif
    } else {
        cpu::CpuBackendOptions backend_options;
        backend_options.quantize_activations = oc.quantized_activations;
        backend = std::make_unique<cpu::CpuBackend>(backend_options);
    }
    const PlacedModel placed(model, *backend);
    LayerProgram program(placed);

    OracleTally t;
    for (const auto& p : fx["prompts"]) score_prompt(program, model.config(), placed, oc, p, t);
    const double top1 = static_cast<double>(t.agree) / static_cast<double>(t.positions);
    std::printf("[ oracle   ] %s kv=%s%s: top-1 agreement %.4f (%lld/%lld), max |dlogit| on HF top-%d %.5f, "
                "greedy %lld/%lld tokens identical (%lld prompts parted at a tie < %.0e)\n",
                oc.fixture, std::string(type_traits(oc.kv_type).name).c_str(),
                oc.quantized_activations ? " q8-activations" : "", top1,
                static_cast<long long>(t.agree), static_cast<long long>(t.positions),
                fx["top_k"].get<int>(), t.max_err, static_cast<long long>(t.greedy_same),
                static_cast<long long>(t.greedy_total), static_cast<long long>(t.greedy_ties),
                static_cast<double>(kTieGap));
    EXPECT_GE(top1, oc.min_top1);
    // On the GPU, batches of more than 8 tokens (every prompt here) go through cuBLAS on f16
    // tiles of the weights and activations: 11-bit significands move logits by up to ~1e-2.
    EXPECT_LE(t.max_err, on_gpu ? std::max(oc.max_logit_error, 2e-2) : oc.max_logit_error);
    if (oc.greedy_must_match) {
        EXPECT_EQ(t.greedy_same, t.greedy_total);
    }
}

INSTANTIATE_TEST_SUITE_P(
    RealModels, LogitsOracle,
    ::testing::Values(
        OracleCase{"STRATA_DEFAULT_MODEL", nullptr, "gemma3_270m_logits.json", GgmlType::F32, 0.99, true,
                   false, 1e-3, 24},
        OracleCase{"STRATA_DEFAULT_MODEL", nullptr, "gemma3_270m_logits.json", GgmlType::F16, 0.99, false,
                   false, 0.05},
        // The fast path: 8-bit activations and f16 KV, the defaults of strata run. Measured on a
        // Zen 5 (AVX-512): Gemma 95.8% / 2.7, Qwen 97.3% / 1.2; bounds leave room for other ISAs.
        OracleCase{"STRATA_DEFAULT_MODEL", nullptr, "gemma3_270m_logits.json", GgmlType::F16, 0.92, false,
                   true, 5.0},
        OracleCase{"STRATA_QWEN2_MODEL", nullptr, "qwen25_coder_05b_logits.json", GgmlType::F32, 0.99, true,
                   false, 1e-3, 24},
        OracleCase{"STRATA_QWEN2_MODEL", nullptr, "qwen25_coder_05b_logits.json", GgmlType::F16, 0.94, false,
                   true, 4.0},
        OracleCase{nullptr, "tiny", "synth_tiny_logits.json", GgmlType::F32, 0.99, true},
        OracleCase{nullptr, "tiny-qwen2", "synth_tiny_qwen2_logits.json", GgmlType::F32, 0.99, true},
        OracleCase{nullptr, "tiny-qwen3", "synth_tiny_qwen3_logits.json", GgmlType::F32, 0.99, true},
        OracleCase{nullptr, "tiny-gemma3", "synth_tiny_gemma3_logits.json", GgmlType::F32, 0.99, true}),
    [](const auto& info) {
        std::string name = info.param.fixture;
        name = name.substr(0, name.find('.'));
        return name + "_kv_" + std::string(type_traits(info.param.kv_type).name) +
               (info.param.quantized_activations ? "_q8act" : "");
    });

}  // namespace
}  // namespace strata
