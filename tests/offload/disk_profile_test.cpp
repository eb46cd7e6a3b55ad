// Disk profile: the sweep returns the points it was asked for (in grid order, positive rates,
// the chosen one among them), stops at its deadline, reads a model file in place and leaves no
// probe behind; the choice among near-equal points; the run's DiskStream settings from a
// profile; the one-line description. Never a speed threshold: the machine is shared.
#include "offload/disk_profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/core/error.h"
#include "offload/hardware_profile.h"
#include "tests/offload/placement_test_util.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kKiB = 1024, kMiB = 1024 * 1024;

size_t n_files(const std::string& folder) {
    return static_cast<size_t>(std::distance(fs::directory_iterator(folder), fs::directory_iterator()));
}

std::string folder_of(const test::ScratchDir& dir) {
    return fs::path(dir.file("x")).parent_path().string();
}

// Odd queue depths and blocks, so a point reporting another configuration shows.
DiskMeasureOptions small_sweep() {
    DiskMeasureOptions o;
    o.grid = {{2, 64 * kKiB, 0}, {5, 128 * kKiB, 0}, {3, 256 * kKiB, 0}};
    o.point_bytes = 1 * kMiB;
    o.mmap_bytes = 2 * kMiB;
    o.budget = std::chrono::duration<double>(30);
    return o;
}

TEST(DiskProfile, SweepReturnsTheGridItWasGiven) {
    test::ScratchDir dir;
    const DiskMeasureOptions o = small_sweep();
    const DiskReadMeasurement m = measure_disk_read_gbs(folder_of(dir), o);
    EXPECT_GT(m.gbs, 0.0);
    EXPECT_EQ(n_files(folder_of(dir)), 0u) << "the probe file was left behind";
    if (!m.direct_io) {
        EXPECT_TRUE(m.sweep.empty());
        EXPECT_EQ(m.queue_depth, 0);
        GTEST_SKIP() << "no O_DIRECT on " << folder_of(dir) << ": one mmap measurement, no sweep";
    }
    ASSERT_EQ(m.sweep.size(), o.grid.size());
    for (size_t i = 0; i < o.grid.size(); ++i) {
        EXPECT_EQ(m.sweep[i].queue_depth, o.grid[i].queue_depth) << i;
        EXPECT_EQ(m.sweep[i].block_bytes, o.grid[i].block_bytes) << i;
        EXPECT_GT(m.sweep[i].gbs, 0.0) << i;
    }
    const DiskPoint chosen = choose_disk_point(m.sweep);
    EXPECT_EQ(m.queue_depth, chosen.queue_depth);
    EXPECT_EQ(m.block_bytes, chosen.block_bytes);
    // The chosen point's rate is read again after the sweep (gbs > 0 above), not its sweep rate.
    HardwareProfile p;
    set_disk(p, m);
    EXPECT_EQ(profile_from_json(profile_to_json(p)), p);
}

TEST(DiskProfile, SweepStopsAtItsDeadline) {
    test::ScratchDir dir;
    DiskMeasureOptions o = small_sweep();
    o.grid.assign(20, {1, 4 * kKiB, 0});
    o.point_bytes = 256 * kKiB;
    // Past the deadline at once: the first point still runs, no other starts.
    o.budget = std::chrono::duration<double>(0);
    const DiskReadMeasurement m = measure_disk_read_gbs(folder_of(dir), o);
    EXPECT_GT(m.gbs, 0.0);
    if (!m.direct_io) GTEST_SKIP() << "no O_DIRECT on " << folder_of(dir);
    ASSERT_EQ(m.sweep.size(), 1u);
    EXPECT_EQ(m.queue_depth, 1);
    EXPECT_EQ(m.block_bytes, 4 * kKiB);
}

TEST(DiskProfile, ReadsALargeEnoughFileInPlace) {
    test::ScratchDir dir;
    const std::string file = dir.file("model.gguf");
    {
        std::ofstream out(file, std::ios::binary);
        std::mt19937 rng(5);
        std::string block(1 << 20, '\0');
        for (char& c : block) c = static_cast<char>(rng());
        for (int i = 0; i < 9; ++i) out << block;  // larger than any point's region below
    }
    EXPECT_GT(measure_disk_read_gbs(file, small_sweep()).gbs, 0.0);
    EXPECT_EQ(n_files(folder_of(dir)), 1u) << "a probe file was written beside a large enough file";
    EXPECT_THROW(measure_disk_read_gbs("/proc/strata-no-such-dir/x", small_sweep()), SystemError);
    DiskMeasureOptions no_points = small_sweep();
    no_points.grid.clear();
    EXPECT_THROW(measure_disk_read_gbs(file, no_points), ArgumentError);
    DiskMeasureOptions bad_block = small_sweep();
    bad_block.grid = {{4, 1000, 0}};
    EXPECT_THROW(measure_disk_read_gbs(file, bad_block), ArgumentError);
}

TEST(DiskProfile, ChoosesTheFastestUnlessAnotherIsWithin3PercentAndSmaller) {
    EXPECT_EQ(choose_disk_point({{4, kMiB, 2.0}, {16, kMiB, 2.05}, {32, kMiB, 3.0}}),
              (DiskPoint{32, kMiB, 3.0}));
    EXPECT_EQ(choose_disk_point({{16, kMiB, 2.05}, {4, kMiB, 2.0}}), (DiskPoint{4, kMiB, 2.0}));
    EXPECT_EQ(choose_disk_point({{16, kMiB, 2.05}, {4, kMiB, 1.9}}), (DiskPoint{16, kMiB, 2.05}));
    // The same bytes in flight: fewer requests.
    EXPECT_EQ(choose_disk_point({{16, 256 * kKiB, 2.0}, {4, kMiB, 1.99}}), (DiskPoint{4, kMiB, 1.99}));
    // Less in flight beats a smaller queue of larger blocks.
    EXPECT_EQ(choose_disk_point({{1, 4 * kMiB, 2.0}, {8, 256 * kKiB, 1.98}}), (DiskPoint{8, 256 * kKiB, 1.98}));
    EXPECT_THROW(choose_disk_point({}), ArgumentError);
    // The default grid: valid points, the old single configuration among them.
    const std::vector<DiskPoint> grid = default_disk_grid();
    EXPECT_GE(grid.size(), 8u);
    EXPECT_NE(std::find(grid.begin(), grid.end(), DiskPoint{8, kMiB, 0}), grid.end());
}

HardwareProfile profile_with(int queue_depth, uint64_t block) {
    HardwareProfile p;
    p.disk_read_gbs = 2.5;
    p.disk_direct_io = true;
    p.disk_sweep = {{queue_depth, block, 2.5}};
    p.disk_queue_depth = queue_depth;
    p.disk_block_bytes = block;
    return p;
}

TEST(DiskProfile, RunUsesTheProfilesQueue) {
    const uint64_t largest = 64 * kMiB + 12345;
    const uint64_t staging = 2 * largest + 64 * kKiB;
    // No profile, or one without a sweep, or mmap asked for: DiskStream's defaults.
    const DiskStreamOptions defaults;
    const HardwareProfile no_sweep;
    const HardwareProfile p = profile_with(16, 4 * kMiB);
    for (const DiskStreamOptions& o : {disk_stream_options(DiskIo::Direct, largest, nullptr),
                                       disk_stream_options(DiskIo::Auto, largest, &no_sweep),
                                       disk_stream_options(DiskIo::Mmap, largest, &p)}) {
        EXPECT_EQ(o.queue_depth, defaults.queue_depth);
        EXPECT_EQ(o.block_bytes, defaults.block_bytes);
        EXPECT_EQ(o.staging_bytes, staging);
    }
    for (DiskIo mode : {DiskIo::Direct, DiskIo::Auto}) {
        const DiskStreamOptions o = disk_stream_options(mode, largest, &p);
        EXPECT_EQ(o.mode, mode);
        EXPECT_EQ(o.queue_depth, 16);
        EXPECT_EQ(o.block_bytes, 4 * kMiB);
        EXPECT_EQ(o.staging_bytes, staging);  // the RAM the budget counts does not change
    }
}

TEST(DiskProfile, SmallModelsNarrowTheQueueToTheirRing) {
    // Ring room beside one 3 MiB read: a little over 3 MiB, so 3 of the 1 MiB requests.
    const HardwareProfile p = profile_with(16, kMiB);
    const uint64_t largest = 3 * kMiB + 5;
    const DiskStreamOptions o = disk_stream_options(DiskIo::Direct, largest, &p);
    EXPECT_EQ(o.staging_bytes, 2 * largest + 64 * kKiB);
    EXPECT_EQ(o.block_bytes, kMiB);
    EXPECT_EQ(o.queue_depth, 3);
    // A tiny model: one block, smaller than asked, still a multiple of 4096.
    const DiskStreamOptions tiny = disk_stream_options(DiskIo::Direct, 10 * kKiB, &p);
    const uint64_t room = tiny.staging_bytes - (12 * kKiB + 4 * kKiB);
    EXPECT_EQ(tiny.queue_depth, 1);
    EXPECT_EQ(tiny.block_bytes, room / 4096 * 4096);
    EXPECT_LT(tiny.block_bytes, kMiB);
    EXPECT_EQ(tiny.block_bytes % 4096, 0u);
}

TEST(DiskProfile, DescribesTheChosenConfiguration) {
    HardwareProfile p = profile_with(16, kMiB);
    p.disk_read_gbs = 1.94;
    EXPECT_EQ(describe_disk(p), "1.9 GB/s (O_DIRECT, 16 x 1 MiB in flight)");
    p = profile_with(32, 256 * kKiB);
    EXPECT_EQ(describe_disk(p), "2.5 GB/s (O_DIRECT, 32 x 256 KiB in flight)");
    HardwareProfile mmap;
    mmap.disk_read_gbs = 5.24;
    EXPECT_EQ(describe_disk(mmap), "5.2 GB/s (mmap)");
    EXPECT_EQ(describe_disk(HardwareProfile{}), "not measured");
    EXPECT_EQ(format_block_bytes(4 * kMiB), "4 MiB");
    EXPECT_EQ(format_block_bytes(kMiB + kMiB / 2), "1.50 MiB");
    EXPECT_EQ(format_block_bytes(68 * kKiB), "68 KiB");
}

}  // namespace
}  // namespace strata
