// The GPU profile: skips without a GPU; otherwise a quick measurement gives plausible rates for
// every type the backend multiplies and leaves the arena's blocks as it found them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels_cuda/gpu_profile.h"
#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

TEST(GpuProfile, QuickMeasurementIsPlausible) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend backend(test::test_options());
    GpuProfileOptions o;
    o.matrix_bytes = 32ull << 20;
    o.transfer_bytes = 16ull << 20;
    o.budget_per_step = std::chrono::duration<double>(0.01);
    std::vector<std::string> steps;
    o.progress = [&](std::string_view s) { steps.emplace_back(s); };
    const uint64_t used_before = backend.arena().used();

    const GpuProfile p = measure_gpu_profile(backend, o);

    EXPECT_FALSE(p.name.empty());
    EXPECT_GT(p.total_bytes, 1ull << 30);
    // Far below and far above any device Strata targets (a T4 reads ~300 GB/s, an H200 ~4800).
    EXPECT_GT(p.read_gbs, 20.0);
    EXPECT_LT(p.read_gbs, 20000.0);
    EXPECT_GT(p.h2d_gbs, 0.5);
    EXPECT_GT(p.d2h_gbs, 0.5);
    EXPECT_GT(p.transfer_latency_us, 0.5);
    EXPECT_LT(p.transfer_latency_us, 10000.0);
    EXPECT_GT(p.prefill_gflops, 100.0);
    // A kernel launch costs at least a few hundred ns on any GPU and driver; a small one takes
    // well under a millisecond. The GEMV floor is what a 4.7 MB product takes beyond its bytes.
    EXPECT_GT(p.op_us, 0.3);
    EXPECT_LT(p.op_us, 1000.0);
    // (The floors are clamped at 0 by construction; only their upper bounds can slip.)
    EXPECT_LT(p.gemv_floor_us, 1000.0);
    EXPECT_LT(p.gemv_tiny_floor_us, 1000.0);
    for (GgmlType type : o.types) {
        const std::string name(type_traits(type).name);
        ASSERT_TRUE(p.gemv_gbs.count(name)) << name;
        EXPECT_GT(p.gemv_gbs.at(name), 5.0) << name;
        EXPECT_LT(p.gemv_gbs.at(name), 100000.0) << name;  // 32 MiB may sit in a large L2
    }
    EXPECT_EQ(steps.front(), "gpu read");
    // Only the matmul's own scratch (grown on demand, kept) may remain.
    EXPECT_LE(backend.arena().used() - used_before, 128ull << 20);
}

}  // namespace
}  // namespace strata::cuda
