// Microbenchmark of the CPU backend's matmul GEMV (m = 1, decode) at 4096 x 4096 for the
// weight types of Q4_K_M / Q8_0 files; reports weight bytes per second. Not part of ctest.
#include <benchmark/benchmark.h>

#include "kernels_cpu/cpu_backend.h"
#include "tests/kernels_cpu/test_util.h"

namespace {

using strata::GgmlType;
using strata::cpu::test::HostTensor;

void bm_gemv(benchmark::State& state, GgmlType type) {
    const int64_t k = 4096, n = 4096;
    strata::cpu::CpuBackend backend(static_cast<int>(state.range(0)));
    const HostTensor w = strata::cpu::test::random_weights(type, k, n);
    const HostTensor x = strata::cpu::test::random_f32({k, 1});
    HostTensor y(GgmlType::F32, {n, 1});
    for (auto _ : state) {
        backend.matmul(w.t, x.t, y.t);
        benchmark::DoNotOptimize(y.bytes.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(w.t.n_bytes()));
    state.counters["threads"] = backend.n_threads();
}

}  // namespace

// Arg = n_threads (0 = physical cores). Real time: bytes/s must count wall clock, not the
// CPU time of the main thread alone.
BENCHMARK_CAPTURE(bm_gemv, q4_K, GgmlType::Q4_K)
    ->Arg(1)
    ->Arg(0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_gemv, q6_K, GgmlType::Q6_K)
    ->Arg(1)
    ->Arg(0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_gemv, q8_0, GgmlType::Q8_0)
    ->Arg(1)
    ->Arg(0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_gemv, f16, GgmlType::F16)
    ->Arg(1)
    ->Arg(0)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
