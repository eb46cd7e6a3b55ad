// Decode-shaped microbenchmarks of the non-matmul ops, per kernel variant in one run (scalar is
// the pre-vectorisation baseline): rms_norm at n_embd 8192, rope of 32 heads × 128, attention
// decode over 512 / 4096 cells (32 heads, 8 KV heads, head dim 128, f16 KV), the gated
// activations at n_ff 28672. Args: kernel variant, n_threads (0 = physical cores).
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "kernels_cpu/cpu_backend.h"
#include "kernels_cpu/cpu_features.h"
#include "tests/kernels_cpu/bench_util.h"

namespace strata::cpu::bench {
namespace {

using test::HostTensor;

int n_threads(int64_t arg) {
    return arg > 0 ? static_cast<int>(arg) : cpu_features().physical_cores;
}

void bm_rms_norm(benchmark::State& state) {
    if (!force_variant(state, variant_arg(state.range(0)))) return;
    CpuBackend backend(n_threads(state.range(1)));
    const HostTensor x = test::random_f32({8192, 1});
    const HostTensor w = test::random_f32({8192}, 0.5f, 2.0f);
    HostTensor y(GgmlType::F32, {8192, 1});
    for (auto _ : state) {
        backend.rms_norm(x.t, &w.t, 1e-5f, y.t);
        benchmark::DoNotOptimize(y.f32());
    }
    state.SetBytesProcessed(state.iterations() * 3 * 8192 * 4);
}

void bm_rope(benchmark::State& state, RopeStyle style) {
    if (!force_variant(state, variant_arg(state.range(0)))) return;
    CpuBackend backend(n_threads(state.range(1)));
    const int64_t n_tokens = state.range(2);
    HostTensor x = test::random_f32({128, 32, n_tokens});
    std::vector<int32_t> pos(static_cast<size_t>(n_tokens));
    for (int64_t t = 0; t < n_tokens; ++t)
        pos[t] = static_cast<int32_t>(1000 + t);
    RopeParams p;
    p.n_rot = 128;
    p.freq_base = 500000.0f;
    p.style = style;
    for (auto _ : state) {
        backend.rope(x.t, pos.data(), p);
        benchmark::DoNotOptimize(x.f32());
    }
}

// One decode token over n_cells of f16 K/V: reads 2 · n_cells · 8 · 128 · 2 bytes.
void bm_attention_decode(benchmark::State& state) {
    if (!force_variant(state, variant_arg(state.range(0)))) return;
    CpuBackend backend(n_threads(state.range(1)));
    const int64_t n_cells = state.range(2);
    const int64_t row = 128 * 8;
    HostTensor k(GgmlType::F16, {row, n_cells}), v(GgmlType::F16, {row, n_cells});
    const HostTensor kv_src = test::random_f32({row, n_cells});
    backend.kv_store(kv_src.t, k.t, 0);
    backend.kv_store(kv_src.t, v.t, 0);
    const HostTensor q = test::random_f32({128, 32, 1});
    HostTensor out(GgmlType::F32, {128, 32, 1});
    AttentionParams p;
    p.n_head = 32;
    p.n_head_kv = 8;
    p.head_dim_k = p.head_dim_v = 128;
    p.scale = 1.0f / std::sqrt(128.0f);
    const int32_t pos = static_cast<int32_t>(n_cells - 1);
    for (auto _ : state) {
        backend.attention(q.t, k.t, v.t, n_cells, &pos, p, out.t);
        benchmark::DoNotOptimize(out.f32());
    }
    state.SetBytesProcessed(state.iterations() * 2 * n_cells * row * 2);
}

void bm_gated(benchmark::State& state, Activation act) {
    if (!force_variant(state, variant_arg(state.range(0)))) return;
    CpuBackend backend(n_threads(state.range(1)));
    const HostTensor g = test::random_f32({28672, 1}, -6.0f, 6.0f);
    const HostTensor u = test::random_f32({28672, 1});
    HostTensor y(GgmlType::F32, {28672, 1});
    for (auto _ : state) {
        backend.gated_activation(g.t, u.t, act, y.t);
        benchmark::DoNotOptimize(y.f32());
    }
    state.SetItemsProcessed(state.iterations() * 28672);
}

constexpr int64_t kScalar = static_cast<int64_t>(KernelVariant::Scalar);

void variants_threads(benchmark::internal::Benchmark* b) {
    for (int64_t v : {kScalar, kAvx2, kAvx512})
        for (int64_t t : {1, 0})
            b->Args({v, t});
}

}  // namespace

BENCHMARK(bm_rms_norm)->ArgNames({"variant", "threads"})->Apply(variants_threads);
BENCHMARK_CAPTURE(bm_rope, neox, RopeStyle::Neox)
    ->ArgNames({"variant", "threads", "tokens"})
    ->Apply([](benchmark::internal::Benchmark* b) {
        for (int64_t v : {kScalar, kAvx2, kAvx512})
            for (int64_t n : {1, 64})
                b->Args({v, 1, n});
    });
BENCHMARK_CAPTURE(bm_rope, norm, RopeStyle::Norm)
    ->ArgNames({"variant", "threads", "tokens"})
    ->Apply([](benchmark::internal::Benchmark* b) {
        for (int64_t v : {kScalar, kAvx2, kAvx512})
            b->Args({v, 1, 1});
    });
BENCHMARK(bm_attention_decode)
    ->ArgNames({"variant", "threads", "cells"})
    ->Apply([](benchmark::internal::Benchmark* b) {
        for (int64_t v : {kScalar, kAvx2, kAvx512})
            for (int64_t t : {1, 0})
                for (int64_t n : {512, 4096})
                    b->Args({v, t, n});
    })
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_gated, silu, Activation::Silu)
    ->ArgNames({"variant", "threads"})
    ->Apply(variants_threads)
    ->UseRealTime();
BENCHMARK_CAPTURE(bm_gated, gelu_tanh, Activation::GeluTanh)
    ->ArgNames({"variant", "threads"})
    ->Apply(variants_threads)
    ->UseRealTime();

}  // namespace strata::cpu::bench
