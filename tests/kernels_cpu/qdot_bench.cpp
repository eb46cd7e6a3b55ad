// Compute ceiling of one core: the quantized dot-product kernels called directly on a weight
// matrix that stays in L2 (256 rows of 4096), activations quantized once outside the timing.
// n_cols = 1 is the decode GEMV kernel (weight bytes/s it could consume if memory kept up),
// n_cols = 8 the prefill tile. Part of kernels_cpu_bench; not in ctest.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels_cpu/qdot.h"
#include "tests/kernels_cpu/bench_util.h"

namespace strata::cpu::bench {
namespace {

using test::HostTensor;

// Args: kernel variant, n_cols.
void bm_qdot_cached(benchmark::State& state, GgmlType type) {
    const KernelVariant variant = variant_arg(state.range(0));
    const int n_cols = static_cast<int>(state.range(1));
    if (!kernel_variant_supported(variant)) {
        state.SkipWithError("CPU lacks this kernel variant");
        return;
    }
    const QDotKernel* kernel = find_qdot_kernel(type, variant);
    if (kernel == nullptr) {
        state.SkipWithError("no kernel for this type in this variant");
        return;
    }
    state.SetLabel(std::string(kernel_variant_name(variant)));
    const int64_t k = 4096, n = 256;
    const HostTensor w = random_block_weights(type, k, n);
    const HostTensor x = test::random_f32({k, kQDotMaxCols});
    const size_t stride = act_row_bytes(*kernel, k);
    std::vector<uint8_t> xq(stride * kQDotMaxCols);
    const int64_t n_blocks = k / type_traits(type).block_size;
    std::vector<float> xd(static_cast<size_t>(kQDotMaxCols * n_blocks));
    for (int c = 0; c < kQDotMaxCols; ++c) {
        uint8_t* row = xq.data() + c * stride;
        kernel->quantize(x.f32() + c * k, row, k);
        if (reads_expanded_scales(*kernel)) expand_act_scales(kernel->act_type, row, n_blocks, xd.data() + c * n_blocks);
    }
    const QDotActs acts{xq.data(), stride, xd.data(), static_cast<size_t>(n_blocks)};
    std::vector<float> out(kQDotMaxCols);
    for (auto _ : state) {
        for (int64_t r = 0; r < n; ++r) {
            kernel->dot(static_cast<const uint8_t*>(w.t.data) + r * w.t.nb[1], acts, n_blocks,
                        n_cols, out.data());
            benchmark::DoNotOptimize(out.data());
        }
    }
    const double iters = static_cast<double>(state.iterations());
    state.SetBytesProcessed(static_cast<int64_t>(iters * static_cast<double>(w.t.n_bytes())));
    state.counters["macs"] = benchmark::Counter(iters * static_cast<double>(k * n * n_cols),
                                                benchmark::Counter::kIsRate);
}

}  // namespace
}  // namespace strata::cpu::bench

using strata::GgmlType;
using namespace strata::cpu::bench;  // NOLINT: benchmark registration only

#define STRATA_QDOT(name, type)                                 \
    BENCHMARK_CAPTURE(bm_qdot_cached, name, type)               \
        ->ArgNames({"variant", "cols"})                         \
        ->Args({kAvx512, 1})                                    \
        ->Args({kAvx2, 1})                                      \
        ->Args({kAvx512, 8})                                    \
        ->Args({kAvx2, 8})                                      \
        ->Unit(benchmark::kMicrosecond)

STRATA_QDOT(q4_K, GgmlType::Q4_K);
STRATA_QDOT(q6_K, GgmlType::Q6_K);
STRATA_QDOT(q8_0, GgmlType::Q8_0);
STRATA_QDOT(q5_0, GgmlType::Q5_0);
STRATA_QDOT(q4_0, GgmlType::Q4_0);
STRATA_QDOT(q4_1, GgmlType::Q4_1);
STRATA_QDOT(iq4_nl, GgmlType::IQ4_NL);
STRATA_QDOT(iq2_xxs, GgmlType::IQ2_XXS);
STRATA_QDOT(iq2_xs, GgmlType::IQ2_XS);
STRATA_QDOT(iq2_s, GgmlType::IQ2_S);
STRATA_QDOT(iq3_xxs, GgmlType::IQ3_XXS);
STRATA_QDOT(iq3_s, GgmlType::IQ3_S);
STRATA_QDOT(iq1_s, GgmlType::IQ1_S);
STRATA_QDOT(iq1_m, GgmlType::IQ1_M);
