// Decode microbenchmark of the CPU backend: GEMV (m = 1) at 8192 x 8192 for the weight types of
// Q4_K_M / Q8_0 files, in weight bytes per second, beside a multi-threaded streaming read of a
// 1 GiB buffer measured in the same run (the ceiling). The GEMV rotates over copies of W that
// together take 1 GiB, so no copy is still in the last-level cache when it is read again.
// Run by hand (not part of ctest); prefill_bench.cpp holds the batched (prefill) benchmarks.
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "kernels_cpu/cpu_backend.h"
#include "kernels_cpu/cpu_features.h"
#include "tests/kernels_cpu/bench_util.h"

namespace strata::cpu::bench {

namespace {

// Read bandwidth (bytes/s) by thread count, from bm_read_bandwidth earlier in the same run.
std::map<int, double>& read_bandwidth() {
    static std::map<int, double> by_threads;
    return by_threads;
}

using test::HostTensor;

constexpr uint64_t kReadBytes = 1ull << 30;
constexpr uint64_t kWorkingSet = 1ull << 30;  // bytes of W copies a GEMV benchmark rotates over


// Σ of n 64-bit words, four independent 256-bit accumulators (a pure streaming read).
__attribute__((target("avx2"))) uint64_t sum_words_avx2(const uint64_t* p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 16 <= n; i += 16) {
        const auto* v = reinterpret_cast<const __m256i*>(p + i);
        a0 = _mm256_add_epi64(a0, _mm256_load_si256(v));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256(v + 1));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256(v + 2));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256(v + 3));
    }
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                       _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3)));
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

uint64_t sum_words(const uint64_t* p, size_t n) {
    if (cpu_features().avx2) return sum_words_avx2(p, n);
    uint64_t s = 0;
    for (size_t i = 0; i < n; ++i)
        s += p[i];
    return s;
}

// STREAM-like read ceiling: each thread sums its static share of a 1 GiB buffer it first
// touched itself. Records the best rate per thread count for the GEMV rows' "pct_of_read_bw"
// (GEMV bytes/s as a percentage of the read bandwidth at the same thread count).
void bm_read_bandwidth(benchmark::State& state) {
    const int threads = threads_arg(state.range(0));
    constexpr size_t kWords = kReadBytes / sizeof(uint64_t);
    constexpr int64_t kChunks = 1024;  // 1 MiB each
    constexpr size_t kChunkWords = kWords / kChunks;
    std::unique_ptr<uint64_t[], void (*)(void*)> buf(
        static_cast<uint64_t*>(std::aligned_alloc(64, kReadBytes)), std::free);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < kChunks; ++c) {
        for (size_t i = 0; i < kChunkWords; ++i)
            buf[c * kChunkWords + i] = i ^ static_cast<uint64_t>(c);
    }
    double seconds = 0.0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        uint64_t total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
        for (int64_t c = 0; c < kChunks; ++c)
            total += sum_words(buf.get() + c * kChunkWords, kChunkWords);
        benchmark::DoNotOptimize(total);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    const double bytes = static_cast<double>(state.iterations()) * kReadBytes;
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
    state.counters["threads"] = threads;
    double& best = read_bandwidth()[threads];
    best = std::max(best, bytes / seconds);
}

// Copies of a random [k, n] weight matrix that together take kWorkingSet bytes: a GEMV that
// rotates over them reads each from memory, not from the last-level cache.
std::vector<HostTensor> rotating_copies(GgmlType type, int64_t k, int64_t n) {
    const uint64_t matrix_bytes = row_bytes(type, k) * static_cast<uint64_t>(n);
    const size_t copies = static_cast<size_t>((kWorkingSet + matrix_bytes - 1) / matrix_bytes);
    std::vector<HostTensor> ws;
    ws.reserve(copies);
    for (size_t i = 0; i < copies; ++i)
        ws.push_back(random_block_weights(type, k, n));
    return ws;
}

// Args: kernel variant, n_threads (0 = physical cores).
void bm_gemv(benchmark::State& state, GgmlType type) {
    if (!force_variant(state, variant_arg(state.range(0)))) return;
    const int64_t k = 8192, n = 8192;
    CpuBackend backend(threads_arg(state.range(1)));
    const uint64_t matrix_bytes = row_bytes(type, k) * static_cast<uint64_t>(n);
    const std::vector<HostTensor> ws = rotating_copies(type, k, n);
    const HostTensor x = test::random_f32({k, 1});
    HostTensor y(GgmlType::F32, {n, 1});
    size_t next = 0;
    for (auto _ : state) {
        backend.matmul(ws[next].t, x.t, y.t);
        next = next + 1 == ws.size() ? 0 : next + 1;
        benchmark::DoNotOptimize(y.bytes.data());
        benchmark::ClobberMemory();
    }
    const double bytes =
        static_cast<double>(state.iterations()) * static_cast<double>(matrix_bytes);
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
    state.counters["threads"] = backend.n_threads();
    const auto ceiling = read_bandwidth().find(backend.n_threads());
    if (ceiling != read_bandwidth().end()) {
        state.counters["pct_of_read_bw"] =
            benchmark::Counter(100.0 * bytes / ceiling->second, benchmark::Counter::kIsRate);
    }
    set_kernel_variant(KernelVariant::Auto);
}

// A split FFN's RAM part of ffn_down is a column slice of the mapped matrix: each of its n
// rows reads `width` of `k` elements, then skips the rest. Args: k, width, n, view (1: the
// slice as a strided view of [k, n] copies; 0: contiguous [width, n] copies, the same bytes).
// Bytes/s count the slice's bytes only; the working set rotates over 1 GiB of whole matrices.
void bm_gemv_slice(benchmark::State& state, GgmlType type) {
    const int64_t k = state.range(0), width = state.range(1), n = state.range(2);
    const bool view = state.range(3) != 0;
    CpuBackend backend(threads_arg(0));
    const std::vector<HostTensor> ws = rotating_copies(type, view ? k : width, n);
    const HostTensor x = test::random_f32({width, 1});
    HostTensor y(GgmlType::F32, {n, 1});
    size_t next = 0;
    for (auto _ : state) {
        const Tensor w = view ? ws[next].t.columns(k - width, width) : ws[next].t;
        backend.matmul(w, x.t, y.t);
        next = next + 1 == ws.size() ? 0 : next + 1;
        benchmark::DoNotOptimize(y.bytes.data());
        benchmark::ClobberMemory();
    }
    const double bytes = static_cast<double>(state.iterations()) *
                         static_cast<double>(row_bytes(type, width) * static_cast<uint64_t>(n));
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
    state.counters["threads"] = backend.n_threads();
}


}  // namespace
}  // namespace strata::cpu::bench

using strata::GgmlType;
using namespace strata::cpu::bench;  // NOLINT: benchmark registration only

// Real time: bytes/s must count wall clock, not the main thread's CPU time. With
// --benchmark_repetitions=N the min and max join the median and mean.
BENCHMARK(bm_read_bandwidth)
    ->Arg(0)
    ->Arg(-1)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond)
    ->ComputeStatistics("min", min_of)
    ->ComputeStatistics("max", max_of);

#define STRATA_GEMV(name, type)                                                   \
    BENCHMARK_CAPTURE(bm_gemv, name, type)                                        \
        ->ArgNames({"variant", "threads"})                                        \
        ->Args({kAvx512, 0})                                                      \
        ->Args({kAvx2, 0})                                                        \
        ->Args({kDequant, 0})                                                     \
        ->UseRealTime()                                                           \
        ->Unit(benchmark::kMicrosecond)                                           \
        ->ComputeStatistics("min", min_of)                                        \
        ->ComputeStatistics("max", max_of)

STRATA_GEMV(q4_K, GgmlType::Q4_K)->Args({kAvx512, -1})->Args({kAvx512, 1});
STRATA_GEMV(q6_K, GgmlType::Q6_K);
STRATA_GEMV(q8_0, GgmlType::Q8_0);
STRATA_GEMV(q5_0, GgmlType::Q5_0);
STRATA_GEMV(q4_0, GgmlType::Q4_0);
STRATA_GEMV(q5_K, GgmlType::Q5_K);

// Llama-2-13B's ffn_down (13824 -> 5120) and 70B's (28672 -> 8192): whole, and the RAM parts
// of split FFNs (1536 and 13056 neurons) as views and as contiguous copies.
#define STRATA_GEMV_SLICE(name, type)                    \
    BENCHMARK_CAPTURE(bm_gemv_slice, name, type)         \
        ->ArgNames({"k", "width", "n", "view"})          \
        ->Args({13824, 13824, 5120, 0})                  \
        ->Args({13824, 1536, 5120, 1})                   \
        ->Args({13824, 1536, 5120, 0})                   \
        ->Args({28672, 28672, 8192, 0})                  \
        ->Args({28672, 13056, 8192, 1})                  \
        ->Args({28672, 13056, 8192, 0})                  \
        ->UseRealTime()                                  \
        ->Unit(benchmark::kMicrosecond)
STRATA_GEMV_SLICE(q4_K, GgmlType::Q4_K);
STRATA_GEMV_SLICE(q6_K, GgmlType::Q6_K);

BENCHMARK_MAIN();
