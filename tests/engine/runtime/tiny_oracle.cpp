// The tiny-model logits oracle (tiny_oracle.h).
#include "tests/engine/runtime/tiny_oracle.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <vector>

#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata::testing {
namespace {

std::string source(const std::string& rel) { return std::string(STRATA_SOURCE_DIR) + "/" + rel; }

// Runs the script; returns the sha256 it prints, or "" when it failed.
std::string make_model(const TinyOracleCase& tc, const std::string& path) {
    const std::string cmd = "python3 " + source(std::string("tests/engine/runtime/") + tc.script) + " " + tc.arch +
                            " " + tc.type + " " + path;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return "";
    char buf[128] = {};
    std::string out = fgets(buf, sizeof buf, p) != nullptr ? buf : "";
    if (pclose(p) != 0) return "";
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
}

// Compares one prompt's prefill and decode logits with the fixture's.
void check_prompt(LayerProgram& program, const PlacedModel& placed, const nlohmann::json& p, TinyOracleResult& r) {
    const ModelConfig& config = placed.model().config();
    const int64_t n_vocab = program.n_vocab();
    const std::vector<int32_t> ids = p["ids"].get<std::vector<int32_t>>();
    const auto n = static_cast<int64_t>(ids.size());
    KvCache kv(config, n, GgmlType::F32, placed.kv_backends());
    std::vector<int32_t> rows(static_cast<size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    std::vector<float> hidden, logits(static_cast<size_t>(n * n_vocab));
    program.forward(ids, kv, rows, hidden);
    program.logits(hidden.data(), n, logits.data());
    KvCache kv1(config, n, GgmlType::F32, placed.kv_backends());
    std::vector<float> step(static_cast<size_t>(n_vocab));
    const int32_t row0 = 0;
    for (int64_t t = 0; t < n; ++t) {
        program.forward({&ids[static_cast<size_t>(t)], 1}, kv1, {&row0, 1}, hidden);
        program.logits(hidden.data(), 1, step.data());
        const auto& ref = p["logits"][static_cast<size_t>(t)];
        const float* pre = logits.data() + t * n_vocab;
        int32_t best = 0;
        for (int64_t v = 0; v < n_vocab; ++v) {
            const double want = ref[static_cast<size_t>(v)].get<double>();
            r.prefill_err = std::max(r.prefill_err, std::fabs(pre[v] - want));
            r.decode_err = std::max(r.decode_err, std::fabs(step[static_cast<size_t>(v)] - want));
            if (want > ref[static_cast<size_t>(best)].get<double>()) best = static_cast<int32_t>(v);
        }
        r.agree += std::max_element(pre, pre + n_vocab) - pre == best;
        ++r.positions;
    }
}

}  // namespace

TinyOracleResult run_tiny_oracle(const TinyOracleCase& tc) {
    TinyOracleResult r;
    std::ifstream in(source(std::string("tests/engine/runtime/fixtures/") + tc.fixture));
    if (!in) return TinyOracleResult{.error = std::string("missing fixture ") + tc.fixture};
    const nlohmann::json fx = nlohmann::json::parse(in);
    ScratchFile file(std::string("tiny_") + tc.arch + "_" + tc.type + ".gguf");
    const std::string digest = make_model(tc, file.path());
    if (digest.empty()) return TinyOracleResult{.error = std::string(tc.script) + " failed (needs python3 with numpy and gguf)"};
    if (tc.check_digest && digest != fx["sha256"].get<std::string>()) {
        return TinyOracleResult{.error = std::string(tc.script) +
                                         " wrote another file than the fixture was made from (numpy or gguf changed?)"};
    }
    const Model model(file.path());
    r.is_moe = model.config().is_moe();
    cpu::CpuBackendOptions options;
    options.quantize_activations = tc.quantized_activations;
    cpu::CpuBackend cpu(options);
    const PlacedModel placed(model, cpu);
    LayerProgram program(placed);
    for (const auto& p : fx["prompts"]) check_prompt(program, placed, p, r);
    std::printf("[ tiny     ] %s %s%s: max |dlogit| prefill %.5f, decode %.5f; top-1 %lld/%lld\n", tc.arch, tc.type,
                tc.quantized_activations ? " q8-activations" : "", r.prefill_err, r.decode_err,
                static_cast<long long>(r.agree), static_cast<long long>(r.positions));
    return r;
}

}  // namespace strata::testing
