// ArenaAllocator (the bookkeeping under DeviceArena), no GPU needed: alignment, best fit,
// coalescing frees, accounting and refusal when nothing fits.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels_cuda/arena_allocator.h"

namespace strata::cuda {
namespace {

constexpr uint64_t kA = ArenaAllocator::kAlignment;

TEST(ArenaAllocator, RoundsToAlignmentAndAccounts) {
    ArenaAllocator a(10 * kA + 17);  // the odd tail is not usable
    EXPECT_EQ(a.capacity(), 10 * kA);
    const auto p = a.allocate(1);
    const auto q = a.allocate(kA + 1);
    ASSERT_TRUE(p && q);
    EXPECT_EQ(*p % kA, 0u);
    EXPECT_EQ(*q % kA, 0u);
    EXPECT_EQ(a.used(), 3 * kA);
    EXPECT_EQ(a.block_size(*q), 2 * kA);
    EXPECT_TRUE(a.free(*p));
    EXPECT_FALSE(a.free(*p)) << "a double free is refused";
    EXPECT_EQ(a.used(), 2 * kA);
    EXPECT_EQ(a.peak(), 3 * kA);
}

TEST(ArenaAllocator, RefusesWhatDoesNotFit) {
    ArenaAllocator a(4 * kA);
    EXPECT_FALSE(a.allocate(5 * kA));
    const auto p = a.allocate(4 * kA);
    ASSERT_TRUE(p);
    EXPECT_FALSE(a.allocate(1));
    EXPECT_TRUE(a.free(*p));
    EXPECT_TRUE(a.allocate(4 * kA)) << "the whole arena is one block again after the free";
}

TEST(ArenaAllocator, BestFitAndCoalescing) {
    ArenaAllocator a(16 * kA);
    const auto b0 = a.allocate(4 * kA), b1 = a.allocate(2 * kA), b2 = a.allocate(4 * kA),
               b3 = a.allocate(2 * kA);
    ASSERT_TRUE(b0 && b1 && b2 && b3);
    a.free(*b0);  // hole of 4 at 0
    a.free(*b3);  // hole of 2 + the 4 at the end merge into 6
    const auto small = a.allocate(2 * kA);
    ASSERT_TRUE(small);
    EXPECT_EQ(*small, *b0) << "best fit takes the 4-unit hole, not the 6-unit one";
    a.free(*small);
    a.free(*b1);
    a.free(*b2);
    EXPECT_EQ(a.largest_free(), 16 * kA) << "all neighbours merged";
    EXPECT_EQ(a.used(), 0u);
}

TEST(ArenaAllocator, RandomTrafficNeverOverlaps) {
    ArenaAllocator a(1024 * kA);
    std::mt19937 gen(7);
    std::vector<std::pair<uint64_t, uint64_t>> live;  // offset, size
    for (int step = 0; step < 4000; ++step) {
        if (!live.empty() && gen() % 2 == 0) {
            const size_t i = gen() % live.size();
            ASSERT_TRUE(a.free(live[i].first));
            live.erase(live.begin() + static_cast<long>(i));
        } else if (const auto p = a.allocate((gen() % 40 + 1) * kA - gen() % kA)) {
            const uint64_t size = a.block_size(*p);
            for (const auto& [o, s] : live) ASSERT_TRUE(*p + size <= o || o + s <= *p) << "overlap";
            live.emplace_back(*p, size);
        }
        uint64_t sum = 0;
        for (const auto& l : live) sum += l.second;
        ASSERT_EQ(sum, a.used());
        ASSERT_LE(a.used(), a.capacity());
    }
}

}  // namespace
}  // namespace strata::cuda
