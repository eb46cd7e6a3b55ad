// Times Sampler::sample at Gemma 3's vocabulary size (262144) for a few parameter sets.
// A benchmark, not a test: it prints and asserts nothing.
// Usage: sampler_bench [n_iters] [case-name substring]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/sampler/sampler.h"
#include "tests/engine/sampler/sampler_reference.h"

namespace {

const char* g_filter = "";

void time_case(const char* name, const strata::SamplerParams& params,
               const std::vector<float>& logits, int n_iters) {
    if (std::string(name).find(g_filter) == std::string::npos) return;
    strata::Sampler sampler(params, static_cast<int32_t>(logits.size()));
    for (int i = 0; i < 64; ++i) sampler.accept(i * 7);
    int32_t sink = sampler.sample(logits);  // warm the buffers
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < n_iters; ++i) sink ^= sampler.sample(logits);
    const std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    std::printf("%-32s %8.3f ms/sample  (checksum %d)\n", name, elapsed.count() / n_iters, sink);
}

}  // namespace

int main(int argc, char** argv) {
    const int n_iters = argc > 1 ? std::atoi(argv[1]) : 200;
    if (argc > 2) g_filter = argv[2];
    const size_t n_vocab = 262144;
    const auto logits = strata::ref::random_logits(n_vocab, 1, -10.0f, 20.0f);

    strata::SamplerParams defaults;
    defaults.seed = 1;
    time_case("defaults (k40 p0.95 min_p0.05)", defaults, logits, n_iters);

    auto greedy = defaults;
    greedy.temperature = 0.0f;
    time_case("greedy", greedy, logits, n_iters);

    auto penalties = defaults;
    penalties.repeat_penalty = 1.1f;
    penalties.frequency_penalty = 0.1f;
    time_case("defaults + penalties", penalties, logits, n_iters);

    auto nucleus = defaults;
    nucleus.top_k = 0;
    time_case("top_k off (top-p over all)", nucleus, logits, n_iters);

    auto min_p_only = defaults;
    min_p_only.top_k = 0;
    min_p_only.top_p = 1.0f;
    time_case("min-p only", min_p_only, logits, n_iters);
    return 0;
}
