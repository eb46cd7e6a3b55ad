// ArgRing (staging.h): small per-op arrays copied to the device, an array pushed lately into the
// current half reused when its bytes come again, and never across a graph's start or a change of
// half. GPU only.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels_cuda/cuda_check.h"
#include "kernels_cuda/device_arena.h"
#include "kernels_cuda/staging.h"
#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

std::vector<int32_t> on_device(const void* dev, size_t n) {
    std::vector<int32_t> out(n);
    CUDA_CHECK(cudaMemcpy(out.data(), dev, n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    return out;
}

class ArgRingTest : public ::testing::Test {
  protected:
    void SetUp() override {
        STRATA_SKIP_WITHOUT_GPU();
        arena = std::make_shared<DeviceArena>(0, 8u << 20);
        ring = std::make_unique<ArgRing>(arena, 4096);
        CUDA_CHECK(cudaStreamCreate(&stream));
    }
    void TearDown() override {
        ring.reset();
        if (stream != nullptr) cudaStreamDestroy(stream);
    }
    const void* push(const std::vector<int32_t>& v) { return ring->push(v.data(), v.size() * sizeof(int32_t), stream); }
    std::shared_ptr<DeviceArena> arena;
    std::unique_ptr<ArgRing> ring;
    cudaStream_t stream = nullptr;
};

TEST_F(ArgRingTest, ReusesAnArrayPushedLatelyWithTheSameBytes) {
    const std::vector<int32_t> positions{7, 8, 9}, caches{1, 2, 3, 4, 5, 6}, freq{11, 12};
    const void* a = push(positions);
    const void* b = push(caches);
    const void* c = push(freq);
    EXPECT_NE(a, b);
    EXPECT_NE(b, c);
    // Interleaved as a batched pass's layers push them: every repeat finds its first copy.
    EXPECT_EQ(push(caches), b);
    EXPECT_EQ(push(positions), a);
    EXPECT_EQ(push(freq), c);
    // Same length, other bytes: a new copy.
    const std::vector<int32_t> moved{7, 8, 10};
    const void* d = push(moved);
    EXPECT_NE(d, a);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_EQ(on_device(a, 3), positions);
    EXPECT_EQ(on_device(b, 6), caches);
    EXPECT_EQ(on_device(d, 3), moved);
}

TEST_F(ArgRingTest, ForgetsAtAGraphBoundaryAndAtAChangeOfHalf) {
    const std::vector<int32_t> positions{3, 1, 4, 1, 5};
    const void* a = push(positions);
    ring->forget_recent();
    const void* b = push(positions);
    EXPECT_NE(a, b) << "a copy from before the boundary is not reused";
    ring->reserve(64, stream);  // room left: stays in this half, but forgets as well
    const void* c = push(positions);
    EXPECT_NE(c, b);
    // Fill the half: the push that does not fit moves to the other half, and a later repeat of
    // an array from the left half is copied again into the new one.
    std::vector<int32_t> filler(200, 0);
    const void* last = nullptr;
    for (int i = 0; i < 8; ++i) {
        filler[0] = i;  // distinct bytes, so nothing is reused
        last = push(filler);
    }
    const void* e = push(positions);
    EXPECT_NE(e, c);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_EQ(on_device(e, positions.size()), positions);
    EXPECT_EQ(on_device(last, filler.size())[0], 7);
}

}  // namespace
}  // namespace strata::cuda
