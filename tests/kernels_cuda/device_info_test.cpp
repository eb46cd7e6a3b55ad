// Device enumeration: skips without a GPU, otherwise checks the figures are plausible.
#include <gtest/gtest.h>

#include "kernels_cuda/device_info.h"

namespace {

TEST(CudaDevices, ReportsPlausibleMemory) {
    const auto devices = strata::cuda::list_devices();
    if (devices.empty()) GTEST_SKIP() << "no CUDA device on this machine";
    for (const auto& d : devices) {
        EXPECT_FALSE(d.name.empty());
        EXPECT_GE(d.compute_major, 7) << "Strata targets sm_75 and newer";
        EXPECT_GT(d.total_bytes, 0u);
        EXPECT_LE(d.free_bytes, d.total_bytes);
        EXPECT_GT(d.multiprocessors, 0);
    }
}

}  // namespace
