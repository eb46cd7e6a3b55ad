// The sparse FFN's row kernels on 7B-shaped matrices larger than the caches (sparse_rows.h):
// the gathered-row GEMV of ffn_up (Q4_K [4096, 11008]) at half the rows against the same kernel
// over every row in order (the dense rate), and the row accumulate of the neuron-major ffn_down
// (Q8_0 or Q4_0 [4096, 11008]) at half the rows. Bytes/s count the weight bytes touched, so the
// sparse rows' rate reads directly as a share of the dense one. Part of kernels_cpu_bench.
// Args: active fraction in percent (100: every row, in order), n_threads (and for the GEMV the
// rows each thread keeps in flight: 1 = the next row's head only, as before), model (7 or 70: the
// shape; 16 threads for a GPU machine's host), and dram (1: the iterations cycle through copies
// of the matrix filling 1 GiB, so rows come from DRAM as in a model's decode).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "kernels_cpu/sparse_rows.h"
#include "quant/input_major.h"
#include "tests/kernels_cpu/bench_util.h"

namespace strata::cpu::bench {
namespace {

// The 7B shape, or with the model argument 70 the 70B one (8192 × 28672: larger than any L3).
struct Shape {
    int64_t embd, ff;
};
Shape shape(int64_t model) { return model == 70 ? Shape{8192, 28672} : Shape{4096, 11008}; }

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

// Copies of w filling at least `bytes` (1 when bytes is 0): iterations cycle through them, so
// that the rows come from DRAM as in a model's decode, not from a last-level cache holding one
// 7B matrix.
std::vector<test::HostTensor> copies(const test::HostTensor& w, uint64_t bytes) {
    const uint64_t n = std::max<uint64_t>(1, (bytes + w.t.n_bytes() - 1) / w.t.n_bytes());
    std::vector<test::HostTensor> out;
    for (uint64_t i = 0; i < n; ++i) out.push_back(w);
    return out;
}
constexpr uint64_t kBeyondCaches = 1ull << 30;  // with the "dram" argument 1

void bm_gather_matvec(benchmark::State& state) {
    const Shape d = shape(state.range(3));
    const std::vector<int32_t> rows = active_rows(d.ff, state.range(0));
    const int n_threads = static_cast<int>(state.range(1));
    const int ahead = static_cast<int>(state.range(2));
    const std::vector<test::HostTensor> ws =
        copies(random_block_weights(GgmlType::Q4_K, d.embd, d.ff), state.range(4) ? kBeyondCaches : 0);
    const test::HostTensor x = test::random_f32({d.embd});
    std::vector<float> y(rows.size());
    size_t i = 0;
    for (auto _ : state) {
        const test::HostTensor& w = ws[i++ % ws.size()];
        gather_matvec(w.t, x.f32(), rows.data(), static_cast<int64_t>(rows.size()), y.data(), n_threads, true, ahead);
        benchmark::DoNotOptimize(y.data());
    }
    const test::HostTensor& w = ws.front();
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(rows.size()) *
                            static_cast<int64_t>(w.t.row_bytes()));
}

void bm_accumulate_rows(benchmark::State& state, GgmlType type) {
    const Shape d = shape(state.range(2));
    const std::vector<int32_t> rows = active_rows(d.ff, state.range(0));
    const int n_threads = static_cast<int>(state.range(1));
    const std::vector<test::HostTensor> ws =
        copies(random_block_weights(type, d.embd, d.ff), state.range(3) ? kBeyondCaches : 0);
    std::vector<float> coef(rows.size(), 0.5f), y(static_cast<size_t>(d.embd));
    size_t i = 0;
    for (auto _ : state) {
        const test::HostTensor& w = ws[i++ % ws.size()];
        accumulate_rows(w.t, coef.data(), rows.data(), static_cast<int64_t>(rows.size()), y.data(), n_threads);
        benchmark::DoNotOptimize(y.data());
    }
    const test::HostTensor& w = ws.front();
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(rows.size()) *
                            static_cast<int64_t>(w.t.row_bytes()));
}

// The input-major Q4_K product (quant/input_major.h) of the gate shape (4096 inputs -> 11008;
// model 70: 8192 -> 28672) or, with down 1, ffn_down's (11008 -> 4096): a random `active%` of the
// inputs nonzero, prefetching `ahead` bytes ahead in each column. Bytes/s count the bytes touched: the scales and mins whole, the active columns'
// values. The dense rate of the same matrix in GGUF's layout is bm_gather_matvec at 100%.
void bm_input_major(benchmark::State& state) {
    const Shape d = shape(state.range(2));
    const bool down = state.range(4) != 0;
    const int64_t ahead = state.range(5);
    const int64_t n_in = down ? d.ff : d.embd, n_out = down ? d.embd : d.ff;
    const int n_threads = static_cast<int>(state.range(1));
    const test::HostTensor q = random_block_weights(GgmlType::Q4_K, n_in, n_out);
    const uint64_t bytes = input_major_q4k_bytes(n_in, n_out);
    const uint64_t n_copies = state.range(3) ? std::max<uint64_t>(1, kBeyondCaches / bytes) : 1;
    std::vector<std::vector<uint8_t>> ws(n_copies, std::vector<uint8_t>(bytes));
    make_input_major_q4k(q.t.data, n_in, n_out, ws[0].data(), 0, n_out);
    for (uint64_t i = 1; i < n_copies; ++i) ws[i] = ws[0];
    std::vector<float> x(static_cast<size_t>(n_in), 0.0f), y(static_cast<size_t>(n_out));
    const std::vector<int32_t> active = active_rows(n_in, state.range(0));
    for (const int32_t j : active) x[static_cast<size_t>(j)] = 0.25f + 0.001f * static_cast<float>(j % 97);
    size_t i = 0;
    for (auto _ : state) {
        input_major_matvec(InputMajorQ4K{ws[i++ % ws.size()].data(), n_in, n_out}, x.data(), y.data(), n_threads, ahead);
        benchmark::DoNotOptimize(y.data());
    }
    const uint64_t touched = bytes - static_cast<uint64_t>(n_in) * static_cast<uint64_t>(n_out) / 2 +
                             active.size() * static_cast<uint64_t>(n_out) / 2;
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(touched));
}

void input_major_args(benchmark::internal::Benchmark* b) {
    b->ArgNames({"active%", "threads", "model", "dram", "down", "ahead"});
    for (int64_t down : {0, 1})
        for (int64_t p : {100, 50})
            for (int64_t ahead : {64, 128, 256, 512}) b->Args({p, 2, 7, 1, down, ahead});  // a 2-core box, from DRAM
    for (int64_t m : {7, 70})  // a GPU machine's host, from DRAM
        for (int64_t down : {0, 1})
            for (int64_t p : {100, 50, 30})
                for (int64_t ahead : {128, 256, 512, 1024}) b->Args({p, 16, m, 1, down, ahead});
    b->Unit(benchmark::kMicrosecond);
}

void gather_args(benchmark::internal::Benchmark* b) {
    b->ArgNames({"active%", "threads", "ahead", "model", "dram"});
    for (int64_t t : {1, 2})
        for (int64_t p : {100, 50})
            for (int64_t a : {1, 4, 8}) b->Args({p, t, a, 7, 0});
    for (int64_t p : {100, 50})
        for (int64_t a : {1, 4, 8}) b->Args({p, 2, a, 7, 1});  // a 2-core box, rows from DRAM
    // A GPU machine's host: 16 threads, rows from one matrix (in its caches) and from DRAM.
    for (int64_t m : {7, 70})
        for (int64_t dram : {0, 1})
            for (int64_t p : {100, 50}) b->Args({p, 16, 4, m, dram});
    b->Unit(benchmark::kMicrosecond);
}

void fractions_threads(benchmark::internal::Benchmark* b) {
    b->ArgNames({"active%", "threads", "model", "dram"});
    for (int64_t t : {1, 2})
        for (int64_t p : {100, 50}) b->Args({p, t, 7, 0});
    for (int64_t p : {100, 50}) b->Args({p, 2, 7, 1});  // a 2-core box, rows from DRAM
    for (int64_t m : {7, 70})  // a GPU machine's host, rows from its caches and from DRAM
        for (int64_t dram : {0, 1})
            for (int64_t p : {100, 50}) b->Args({p, 16, m, dram});
    b->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace strata::cpu::bench

using strata::GgmlType;
using namespace strata::cpu::bench;  // NOLINT: benchmark registration only

BENCHMARK(bm_gather_matvec)->Apply(gather_args);
BENCHMARK(bm_input_major)->Apply(input_major_args);
BENCHMARK_CAPTURE(bm_accumulate_rows, q8_0, GgmlType::Q8_0)->Apply(fractions_threads);
BENCHMARK_CAPTURE(bm_accumulate_rows, q4_0, GgmlType::Q4_0)->Apply(fractions_threads);
