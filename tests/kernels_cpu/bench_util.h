// Helpers for the CPU kernel benchmarks: large random weight matrices filled fast (random
// bytes, sane f16 scales; values do not matter for speed) and the kernel-variant argument.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels_cpu/cpu_features.h"
#include "kernels_cpu/kernel_variant.h"
#include "quant/half.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cpu::bench {

// Random bytes (xorshift, one stream per OpenMP thread) with every f16 scale field set to a
// small positive value, so no block holds inf or NaN.
inline test::HostTensor random_block_weights(GgmlType type, int64_t k, int64_t n) {
    test::HostTensor w(type, {k, n});
    const TypeTraits& traits = type_traits(type);
    const uint64_t n_blocks = w.t.n_bytes() / traits.type_size;
    const std::vector<size_t> halves = test::half_fields(type);
    uint8_t* bytes = w.bytes.data();
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int64_t chunk = 0; chunk < static_cast<int64_t>((n_blocks + 4095) / 4096); ++chunk) {
            uint64_t s = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(chunk + 1);
            const uint64_t b1 =
                std::min<uint64_t>(n_blocks, static_cast<uint64_t>(chunk + 1) * 4096);
            for (uint64_t b = static_cast<uint64_t>(chunk) * 4096; b < b1; ++b) {
                uint8_t* blk = bytes + b * traits.type_size;
                for (size_t i = 0; i < traits.type_size; i += 8) {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    std::memcpy(blk + i, &s, std::min<size_t>(8, traits.type_size - i));
                }
                const uint16_t h = fp32_to_fp16(0.01f + static_cast<float>(s & 0xFF) * 1e-4f);
                for (size_t offset : halves) std::memcpy(blk + offset, &h, sizeof(h));
                if (type == GgmlType::IQ1_M) test::set_iq1_m_scale(blk, h);
            }
        }
    }
    return w;
}

// Benchmark argument <-> variant (the enum's value).
inline KernelVariant variant_arg(int64_t v) {
    return static_cast<KernelVariant>(v);
}
constexpr int64_t kDequant = static_cast<int64_t>(KernelVariant::Dequant);
constexpr int64_t kAvx2 = static_cast<int64_t>(KernelVariant::Avx2);
constexpr int64_t kAvx512 = static_cast<int64_t>(KernelVariant::Avx512);

// Forces the variant for one benchmark; false (and the benchmark skipped) if the CPU lacks it.
inline bool force_variant(benchmark::State& state, KernelVariant v) {
    if (!kernel_variant_supported(v)) {
        state.SkipWithError("CPU lacks this kernel variant");
        return false;
    }
    set_kernel_variant(v);
    state.SetLabel(std::string(kernel_variant_name(v)));
    return true;
}

// Benchmark argument -> threads: n > 0 as given, 0 = physical cores, -1 = logical cores.
inline int threads_arg(int64_t arg) {
    if (arg > 0) return static_cast<int>(arg);
    return arg == 0 ? cpu_features().physical_cores : cpu_features().logical_cores;
}

// Statistics over a benchmark's repetitions (ComputeStatistics).
inline double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
inline double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

}  // namespace strata::cpu::bench
