// The sparse FFN's row kernels on 7B-shaped matrices larger than the caches (sparse_rows.h):
// the gathered-row GEMV of ffn_up (Q4_K [4096, 11008]) at half the rows against the same kernel
// over every row in order (the dense rate), and the row accumulate of the neuron-major ffn_down
// (Q8_0 or Q4_0 [4096, 11008]) at half the rows. Bytes/s count the weight bytes touched, so the
// sparse rows' rate reads directly as a share of the dense one. Part of kernels_cpu_bench.
// Args: active fraction in percent (100: every row, in order), n_threads (and for the GEMV the
// rows each thread keeps in flight: 1 = the next row's head only, as before).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "kernels_cpu/sparse_rows.h"
#include "tests/kernels_cpu/bench_util.h"

namespace strata::cpu::bench {
namespace {

constexpr int64_t kEmbd = 4096, kFf = 11008;

// The first `percent` of a random permutation of [0, n), sorted (as a mask's active list is).
std::vector<int32_t> active_rows(int64_t n, int64_t percent) {
    std::vector<int32_t> rows(static_cast<size_t>(n));
    std::iota(rows.begin(), rows.end(), 0);
    if (percent >= 100) return rows;
    std::mt19937 rng(7);
    std::shuffle(rows.begin(), rows.end(), rng);
    rows.resize(static_cast<size_t>(n * percent / 100));
    std::sort(rows.begin(), rows.end());
    return rows;
}

void bm_gather_matvec(benchmark::State& state) {
    const std::vector<int32_t> rows = active_rows(kFf, state.range(0));
    const int n_threads = static_cast<int>(state.range(1));
    const int ahead = static_cast<int>(state.range(2));
    static const test::HostTensor w = random_block_weights(GgmlType::Q4_K, kEmbd, kFf);
    const test::HostTensor x = test::random_f32({kEmbd});
    std::vector<float> y(rows.size());
    for (auto _ : state) {
        gather_matvec(w.t, x.f32(), rows.data(), static_cast<int64_t>(rows.size()), y.data(), n_threads, true, ahead);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(rows.size()) *
                            static_cast<int64_t>(w.t.row_bytes()));
}

void bm_accumulate_rows(benchmark::State& state, GgmlType type) {
    const std::vector<int32_t> rows = active_rows(kFf, state.range(0));
    const int n_threads = static_cast<int>(state.range(1));
    const test::HostTensor w = random_block_weights(type, kEmbd, kFf);
    std::vector<float> coef(rows.size(), 0.5f), y(static_cast<size_t>(kEmbd));
    for (auto _ : state) {
        accumulate_rows(w.t, coef.data(), rows.data(), static_cast<int64_t>(rows.size()), y.data(), n_threads);
        benchmark::DoNotOptimize(y.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(rows.size()) *
                            static_cast<int64_t>(w.t.row_bytes()));
}

void gather_args(benchmark::internal::Benchmark* b) {
    b->ArgNames({"active%", "threads", "ahead"});
    for (int64_t t : {1, 2})
        for (int64_t p : {100, 50})
            for (int64_t a : {1, 4, 8}) b->Args({p, t, a});
    b->Unit(benchmark::kMicrosecond);
}

void fractions_threads(benchmark::internal::Benchmark* b) {
    b->ArgNames({"active%", "threads"});
    for (int64_t t : {1, 2})
        for (int64_t p : {100, 50}) b->Args({p, t});
    b->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace strata::cpu::bench

using strata::GgmlType;
using namespace strata::cpu::bench;  // NOLINT: benchmark registration only

BENCHMARK(bm_gather_matvec)->Apply(gather_args);
BENCHMARK_CAPTURE(bm_accumulate_rows, q8_0, GgmlType::Q8_0)->Apply(fractions_threads);
BENCHMARK_CAPTURE(bm_accumulate_rows, q4_0, GgmlType::Q4_0)->Apply(fractions_threads);
