// Decode microbenchmark of a MoE layer's host experts (CpuBackend::expert_ffn, the op a
// host-routed layer runs once per token): Qwen3-30B-A3B's expert shapes (n_embd 2048, 768 wide),
// 8 of a pool of 128 experts chosen at random per call, so the pool (330 MiB) is read from
// memory, not the last-level cache. Bytes/s count the chosen experts' three matrices; compare
// with bm_gemv's rate for one large matrix (kernels_cpu_bench.cpp). Args: threads (0 = physical
// cores), down type (0: q4_K, 1: q6_K).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/bench_util.h"

namespace strata::cpu::bench {
namespace {

void bm_expert_ffn(benchmark::State& state) {
    constexpr int64_t kEmbd = 2048, kWidth = 768, kPool = 128, kUsed = 8;
    CpuBackend backend(threads_arg(state.range(0)));
    const GgmlType down_type = state.range(1) != 0 ? GgmlType::Q6_K : GgmlType::Q4_K;
    std::vector<test::HostTensor> gates, ups, downs;
    for (int64_t e = 0; e < kPool; ++e) {
        gates.push_back(random_block_weights(GgmlType::Q4_K, kEmbd, kWidth));
        ups.push_back(random_block_weights(GgmlType::Q4_K, kEmbd, kWidth));
        downs.push_back(random_block_weights(down_type, kWidth, kEmbd));
    }
    const test::HostTensor x = test::random_f32({kEmbd, 1});
    test::HostTensor y(GgmlType::F32, {kEmbd, 1});
    std::mt19937 rng(7);
    std::vector<int> order(kPool);
    std::iota(order.begin(), order.end(), 0);
    std::vector<ExpertRef> chosen(kUsed);
    double bytes = 0;
    for (auto _ : state) {
        std::shuffle(order.begin(), order.end(), rng);
        for (int64_t j = 0; j < kUsed; ++j) {
            const auto e = static_cast<size_t>(order[static_cast<size_t>(j)]);
            chosen[static_cast<size_t>(j)] = {&gates[e].t, &ups[e].t, &downs[e].t, 0.125f};
            bytes += static_cast<double>(gates[e].t.n_bytes() + ups[e].t.n_bytes() + downs[e].t.n_bytes());
        }
        backend.expert_ffn({&x.t, chosen, Activation::Silu}, y.t);
        benchmark::DoNotOptimize(y.bytes.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
    state.counters["threads"] = backend.n_threads();
}

}  // namespace
}  // namespace strata::cpu::bench

using namespace strata::cpu::bench;  // NOLINT: benchmark registration only

BENCHMARK(bm_expert_ffn)->ArgNames({"threads", "down_q6_K"})->Args({0, 1})->Args({0, 0})->Args({8, 1})->Args({1, 1})->UseRealTime()->Unit(benchmark::kMicrosecond);
