// Microbenchmark of the CUDA backend (Google Benchmark, run by hand, not in ctest): decode GEMV
// GB/s at 8192 x 28672 for Q4_K, Q6_K, Q8_0 (and more) beside a device-to-device copy measured in
// the same run, a prefill matmul through cuBLAS, and a summary table of GEMV / copy.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "kernels_cuda/cuda_backend.h"
#include "kernels_cuda/device_info.h"
#include "tests/kernels_cpu/test_util.h"

namespace {

using strata::GgmlType;
using strata::Tensor;
using strata::cpu::test::HostTensor;
using strata::cuda::CudaBackend;
using strata::cuda::DeviceTensor;

constexpr int kReps = 20;  // launches per timed batch (one synchronize per batch)
std::map<std::string, double> g_bandwidth;  // GB/s of each benchmark's last run, for the summary

CudaBackend* make_backend(bool quantize_activations, int rows_per_warp) {
    if (strata::cuda::list_devices().empty()) return nullptr;
    strata::cuda::CudaBackendOptions o;
    o.budget_bytes = 4ull << 30;
    o.quantize_activations = quantize_activations;
    o.gemv_rows_per_warp = rows_per_warp;
    return new CudaBackend(o);  // lives until exit
}

// Backends by GEMV variant: rows per warp 1, 2, 4 (q8 activations), and 0 = f32 activations.
CudaBackend* backend(int variant = 2) {
    static CudaBackend* b[5] = {make_backend(false, 1), make_backend(true, 1), make_backend(true, 2), nullptr,
                                make_backend(true, 4)};
    return b[variant];
}

// Random bytes with sane f16 scales: the speed of real weights without minutes of quantizing.
HostTensor random_blocks(GgmlType type, int64_t k, int64_t n) {
    HostTensor w(type, {k, n});
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i + 8 <= w.bytes.size(); i += 8) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        std::memcpy(&w.bytes[i], &s, 8);
    }
    const auto& traits = strata::type_traits(type);
    if (traits.is_quantized) {
        for (uint64_t b = 0; b < w.t.n_bytes() / traits.type_size; ++b) {
            for (size_t off : strata::cpu::test::half_fields(type)) {
                const uint16_t h = strata::fp32_to_fp16(0.01f + 0.001f * static_cast<float>(b % 13));
                std::memcpy(w.bytes.data() + b * traits.type_size + off, &h, sizeof(h));
            }
        }
    }
    return w;
}

template <class F>
void timed_batches(benchmark::State& state, CudaBackend& b, F&& run, double bytes_per_run,
                   const std::string& name) {
    run();  // warm-up: module load, scratch allocation
    b.synchronize();
    double seconds = 0.0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kReps; ++i) run();
        b.synchronize();
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        state.SetIterationTime(dt / kReps);
        seconds += dt;
    }
    const double runs = static_cast<double>(state.iterations()) * kReps;
    g_bandwidth[name] = bytes_per_run * runs / seconds / 1e9;
    state.counters["GB/s"] = g_bandwidth[name];
}

void bm_copy(benchmark::State& state) {
    if (backend() == nullptr) return state.SkipWithError("no CUDA device");
    const int64_t n = 512ll << 20;  // bytes per buffer, far beyond L2
    DeviceTensor a = backend()->allocate(GgmlType::F32, {n / 4}, "copy source");
    DeviceTensor b = backend()->allocate(GgmlType::F32, {n / 4}, "copy destination");
    cudaMemset(a.buffer.data(), 1, static_cast<size_t>(n));
    // The copy runs on the legacy stream; synchronize() of the backend does not cover it, so
    // the batch ends with a device synchronize instead.
    auto run = [&] { cudaMemcpyAsync(b.buffer.data(), a.buffer.data(), static_cast<size_t>(n), cudaMemcpyDeviceToDevice); };
    run();
    cudaDeviceSynchronize();
    double seconds = 0.0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kReps; ++i) run();
        cudaDeviceSynchronize();
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        state.SetIterationTime(dt / kReps);
        seconds += dt;
    }
    const double runs = static_cast<double>(state.iterations()) * kReps;
    g_bandwidth["copy"] = 2.0 * static_cast<double>(n) * runs / seconds / 1e9;  // read + write
    state.counters["GB/s"] = g_bandwidth["copy"];
}

// One weight matrix per (variant, type), made once: random bytes are cheap, uploads are not.
const DeviceTensor& weights(CudaBackend& b, int variant, GgmlType type, int64_t k, int64_t n) {
    static std::map<std::pair<int, GgmlType>, DeviceTensor> cache;
    auto it = cache.find({variant, type});
    if (it == cache.end()) {
        const HostTensor w = random_blocks(type, k, n);
        it = cache.emplace(std::make_pair(variant, type), b.upload(w.t, "bench weights")).first;
    }
    return it->second;
}

// y [n, m] = W [k, n] · x [k, m] on the backend of `variant`; bytes = weights + x + y.
void bm_matmul(benchmark::State& state, GgmlType type, int64_t m, int variant) {
    CudaBackend* b = backend(variant);
    if (b == nullptr) return state.SkipWithError("no CUDA device");
    const int64_t k = 8192, n = 28672;
    const DeviceTensor& wd = weights(*b, variant, type, k, n);
    DeviceTensor xd = b->upload(strata::cpu::test::random_f32({k, m}).t, "bench x");
    DeviceTensor yd = b->allocate(GgmlType::F32, {n, m});
    const double bytes = static_cast<double>(wd.tensor.n_bytes()) + 4.0 * static_cast<double>((k + n) * m);
    const std::string name = std::string(strata::type_traits(type).name) + " m=" + std::to_string(m) +
                             (variant == 0 ? " f32 x" : " q8 x, rows/warp " + std::to_string(variant));
    timed_batches(state, *b, [&] { b->matmul(wd.tensor, xd.tensor, yd.tensor); }, bytes, name);
    if (m > 8) state.counters["TFLOP/s"] = 2.0 * k * n * m * g_bandwidth[name] * 1e9 / bytes / 1e12;
}

}  // namespace

BENCHMARK(bm_copy)->UseManualTime()->Unit(benchmark::kMicrosecond);
#define STRATA_GEMV_BENCH(tag, type, m, variant) \
    BENCHMARK_CAPTURE(bm_matmul, tag, type, m, variant)->UseManualTime()->Unit(benchmark::kMicrosecond)
STRATA_GEMV_BENCH(q4_K_r1, GgmlType::Q4_K, 1, 1);
STRATA_GEMV_BENCH(q4_K_r2, GgmlType::Q4_K, 1, 2);
STRATA_GEMV_BENCH(q4_K_r4, GgmlType::Q4_K, 1, 4);
STRATA_GEMV_BENCH(q6_K_r1, GgmlType::Q6_K, 1, 1);
STRATA_GEMV_BENCH(q6_K_r2, GgmlType::Q6_K, 1, 2);
STRATA_GEMV_BENCH(q8_0_r1, GgmlType::Q8_0, 1, 1);
STRATA_GEMV_BENCH(q8_0_r2, GgmlType::Q8_0, 1, 2);
STRATA_GEMV_BENCH(q4_0_r2, GgmlType::Q4_0, 1, 2);
STRATA_GEMV_BENCH(q4_0_r4, GgmlType::Q4_0, 1, 4);
STRATA_GEMV_BENCH(q5_K_r2, GgmlType::Q5_K, 1, 2);
STRATA_GEMV_BENCH(q5_K_r4, GgmlType::Q5_K, 1, 4);
STRATA_GEMV_BENCH(q4_K_m4_r2, GgmlType::Q4_K, 4, 2);
STRATA_GEMV_BENCH(q4_K_f32x, GgmlType::Q4_K, 1, 0);
STRATA_GEMV_BENCH(f16, GgmlType::F16, 1, 0);
STRATA_GEMV_BENCH(q4_K_prefill512, GgmlType::Q4_K, 512, 2);

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    if (g_bandwidth.count("copy") == 0) return 0;
    const double copy = g_bandwidth["copy"];
    std::printf("\n| benchmark (8192 x 28672) | GB/s | of copy |\n| --- | ---: | ---: |\n");
    std::printf("| device-to-device copy (read + write) | %.0f | 100%% |\n", copy);
    for (const auto& [name, gbs] : g_bandwidth) {
        if (name != "copy") std::printf("| %s | %.0f | %.0f%% |\n", name.c_str(), gbs, 100.0 * gbs / copy);
    }
    return 0;
}
