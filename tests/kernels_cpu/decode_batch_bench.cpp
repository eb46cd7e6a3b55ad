// Small-batch decode microbenchmark (continuous batching in `strata serve`, speculation's
// verification): y [n, m] = W · x through the CPU backend at m = 1, 2, 4, 8, 16 rows, W [4096,
// 14336] (a 7B/8B FFN gate or up matrix) in Q4_K and Q8_0, and its transpose [14336, 4096] in
// Q6_K (the FFN down matrix of a Q4_K_M file), against m single-row calls (`one_at_a_time`): what
// decoding m streams one after another costs. The kernels dot each weight row with up to 8
// activation rows per call (qdot.h), so a batch of 8 reads W once where 8 single calls read it 8
// times. One such matrix (33-62 MB) fits the L3 of a server CPU (the GPU machine's Xeon has
// 300 MB), so `from_ram` 1 cycles through copies of it totalling 1 GiB, and every call streams
// its W from RAM as a model's weights do. Part of kernels_cpu_bench; not in ctest.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels_cpu/cpu_backend.h"
#include "kernels_cpu/cpu_features.h"
#include "tests/kernels_cpu/bench_util.h"

namespace strata::cpu::bench {
namespace {

using test::HostTensor;

constexpr int64_t kBatchK = 4096, kBatchN = 14336;

const HostTensor& weights(GgmlType type) {
    static const HostTensor q4k = random_block_weights(GgmlType::Q4_K, kBatchK, kBatchN);
    static const HostTensor q80 = random_block_weights(GgmlType::Q8_0, kBatchK, kBatchN);
    static const HostTensor q6k = random_block_weights(GgmlType::Q6_K, kBatchN, kBatchK);
    return type == GgmlType::Q4_K ? q4k : type == GgmlType::Q6_K ? q6k : q80;
}

constexpr uint64_t kPoolBytes = 1ull << 30;

// Copies of weights(type) totalling at least kPoolBytes, built on first use.
const std::vector<HostTensor>& weight_pool(GgmlType type) {
    static std::vector<HostTensor> pools[3];
    std::vector<HostTensor>& pool = pools[type == GgmlType::Q4_K ? 0 : type == GgmlType::Q6_K ? 1 : 2];
    if (pool.empty()) {
        const HostTensor& w = weights(type);
        const uint64_t copies = (kPoolBytes + w.t.n_bytes() - 1) / w.t.n_bytes();
        pool.reserve(copies);
        for (uint64_t i = 0; i < copies; ++i) pool.push_back(w);
    }
    return pool;
}

// Args: batch m, one_at_a_time (0: one call of m rows; 1: m calls of one row), n_threads
// (0 = physical cores), from_ram (0: one W, cached where L3 holds it; 1: the next of a 1 GiB
// pool of copies each call), variant (0: the best this CPU has; else a KernelVariant, skipped
// where the CPU lacks it: the AVX2 kernels on an AVX-512 machine, as a laptop runs them).
void bm_decode_batch(benchmark::State& state, GgmlType type) {
    const int64_t m = state.range(0);
    const bool single = state.range(1) != 0;
    const int threads = state.range(2) > 0 ? static_cast<int>(state.range(2)) : cpu_features().physical_cores;
    const bool from_ram = state.range(3) != 0;
    CpuBackend backend(threads);
    if (state.range(4) == 0) {
        set_kernel_variant(KernelVariant::Auto);
    } else if (!force_variant(state, variant_arg(state.range(4)))) {
        return;
    }
    state.SetLabel(std::string(kernel_variant_name(active_kernel_variant())) + (single ? " one row per call" : " batched") +
                   (from_ram ? " from RAM" : ""));
    const HostTensor& w = weights(type);
    const std::vector<HostTensor>* pool = from_ram ? &weight_pool(type) : nullptr;
    const HostTensor x = test::random_f32({w.t.ne[0], m});
    HostTensor y(GgmlType::F32, {w.t.ne[1], m});
    size_t next = 0;
    for (auto _ : state) {
        const Tensor& wt = pool != nullptr ? (*pool)[next++ % pool->size()].t : w.t;
        if (single) {
            for (int64_t r = 0; r < m; ++r) {
                Tensor yr = y.t.rows(r, 1);
                backend.matmul(wt, x.t.rows(r, 1), yr);
            }
        } else {
            backend.matmul(wt, x.t, y.t);
        }
        benchmark::ClobberMemory();
    }
    const double iters = static_cast<double>(state.iterations());
    state.counters["tokens"] = benchmark::Counter(static_cast<double>(m) * iters, benchmark::Counter::kIsRate);
    state.counters["weight_GBps"] = benchmark::Counter(
        static_cast<double>(w.t.n_bytes()) * (single ? static_cast<double>(m) : 1.0) * iters / 1e9,
        benchmark::Counter::kIsRate);
}

}  // namespace
}  // namespace strata::cpu::bench

using strata::GgmlType;
using namespace strata::cpu::bench;  // NOLINT: benchmark registration only

#define STRATA_DECODE_BATCH(name, type)                                   \
    BENCHMARK_CAPTURE(bm_decode_batch, name, type)                        \
        ->ArgNames({"batch", "one_at_a_time", "threads", "from_ram", "variant"}) \
        ->ArgsProduct({{1, 2, 4, 8, 16}, {0, 1}, {0}, {0, 1}, {0, kAvx2}})       \
        ->UseRealTime()                                                   \
        ->Unit(benchmark::kMillisecond)

STRATA_DECODE_BATCH(q4_K, GgmlType::Q4_K);
STRATA_DECODE_BATCH(q8_0, GgmlType::Q8_0);
STRATA_DECODE_BATCH(q6_K_down, GgmlType::Q6_K);
