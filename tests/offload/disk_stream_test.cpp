// DiskStream against pread: random files, reads at odd offsets and lengths, several cyclic
// passes through a staging ring much smaller than the data, in direct and mmap mode; the
// misuse errors; and that direct mode leaves the page cache alone.
#include "offload/disk_stream.h"

#include "engine/core/error.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace strata {
namespace {

namespace fs = std::filesystem;

std::string fs_name(const std::string& path) {
    struct statfs st {};
    if (::statfs(path.c_str(), &st) != 0) return "unknown";
    switch (static_cast<unsigned long>(st.f_type)) {
        case 0x01021994:
            return "tmpfs";
        case 0x794c7630:
            return "overlayfs";
        case 0xEF53:
            return "ext2/3/4";
        case 0x58465342:
            return "xfs";
        case 0x9123683E:
            return "btrfs";
        case 0x6969:
            return "nfs";
        case 0x2FC12FC1:
            return "zfs";
        case 0x65735546:
            return "fuse";
        default:
            return cat("fs type 0x", std::hex, st.f_type);
    }
}

void write_random_file(const std::string& path, uint64_t size, uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> words((size + 7) / 8);
    for (uint64_t& w : words)
        w = rng();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(size));
    ASSERT_TRUE(out.good()) << path;
}

std::vector<uint8_t> pread_bytes(const std::string& path, uint64_t offset, uint64_t bytes) {
    std::vector<uint8_t> out(bytes);
    const int fd = ::open(path.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0) << path;
    uint64_t done = 0;
    while (done < bytes) {
        const ssize_t got = ::pread(fd, out.data() + done, bytes - done, offset + done);
        if (got <= 0) break;
        done += static_cast<uint64_t>(got);
    }
    ::close(fd);
    EXPECT_EQ(done, bytes);
    return out;
}

// A scratch directory, preferring one whose file system takes O_DIRECT: under the build
// directory first, then the system temp directory.
class ScratchDir {
  public:
    ScratchDir() {
        const std::string tag = cat("strata_disk_stream_", ::getpid());
        for (const fs::path& root : {fs::path(STRATA_BIN_DIR), fs::temp_directory_path()}) {
            std::error_code ec;
            const fs::path dir = root / tag;
            fs::create_directories(dir, ec);
            if (ec) continue;
            const std::string probe = (dir / "probe").string();
            write_random_file(probe, 8192, 1);
            const bool direct = supports_direct_io(probe);
            fs::remove(probe, ec);
            if (path_.empty() || (direct && !direct_)) {
                if (!path_.empty()) fs::remove_all(path_, ec);
                path_ = dir.string();
                direct_ = direct;
            } else {
                fs::remove_all(dir, ec);
            }
            if (direct_) break;
        }
    }
    ~ScratchDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    bool direct() const { return direct_; }
    std::string skip_reason() const {
        return cat("O_DIRECT is not supported on ", path_, " (", fs_name(path_), ")");
    }

  private:
    std::string path_;
    bool direct_ = false;
};

struct Read {
    int file;
    uint64_t offset;
    uint64_t bytes;
};

// Reads at odd offsets and lengths, the first at offset 0 and one ending exactly at EOF.
std::vector<Read> odd_schedule(uint64_t file_size, uint64_t max_bytes, int n, uint32_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Read> reads;
    reads.push_back({0, 0, 12345});
    for (int i = 0; i < n; ++i) {
        const uint64_t bytes = 1 + rng() % max_bytes;
        reads.push_back({0, rng() % (file_size - bytes), bytes});
    }
    reads.push_back({0, file_size - 777777, 777777});
    reads.push_back({0, 4096 * 3, 4096});  // already aligned
    return reads;
}

// Every pass acquires each read in order and checks its bytes against pread. With hold_two,
// read i is released only after i+1 is acquired, and must still be intact then.
void check_passes(DiskStream& stream, const std::vector<std::string>& paths,
                  const std::vector<Read>& reads, int passes, bool hold_two = false) {
    std::vector<std::vector<uint8_t>> expected;
    for (const Read& r : reads) {
        stream.add_read(r.file, r.offset, r.bytes);
        expected.push_back(pread_bytes(paths[r.file], r.offset, r.bytes));
    }
    const int n = static_cast<int>(reads.size());
    int held = -1;
    const void* held_data = nullptr;
    for (int pass = 0; pass < passes; ++pass) {
        for (int id = 0; id < n; ++id) {
            const void* data = stream.acquire(id);
            ASSERT_NE(data, nullptr);
            ASSERT_EQ(std::memcmp(data, expected[id].data(), expected[id].size()), 0)
                << "pass " << pass << " read " << id << ": " << reads[id].bytes << " bytes at "
                << reads[id].offset;
            if (!hold_two) {
                stream.release(id);
                continue;
            }
            if (held >= 0) {
                ASSERT_EQ(std::memcmp(held_data, expected[held].data(), expected[held].size()), 0)
                    << "read " << held << " changed while held";
                stream.release(held);
            }
            held = id;
            held_data = data;
        }
    }
    if (held >= 0) stream.release(held);
}

uint64_t sum_bytes(const std::vector<Read>& reads) {
    uint64_t total = 0;
    for (const Read& r : reads)
        total += r.bytes;
    return total;
}

class DiskStreamTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = new ScratchDir();
        path_ = dir_->file("weights.bin");
        write_random_file(path_, kSize, 42);
    }
    static void TearDownTestSuite() {
        delete dir_;
        dir_ = nullptr;
    }
    static constexpr uint64_t kSize = (24ull << 20) + 1234;  // not a multiple of 4096
    static ScratchDir* dir_;
    static std::string path_;
};
ScratchDir* DiskStreamTest::dir_ = nullptr;
std::string DiskStreamTest::path_;

// Direct and mmap mode, one and sixteen requests in flight.
class DiskStreamModeTest : public DiskStreamTest,
                           public ::testing::WithParamInterface<std::tuple<DiskIo, int>> {
  protected:
    DiskStreamOptions options() const {
        DiskStreamOptions o;
        o.mode = std::get<0>(GetParam());
        o.queue_depth = std::get<1>(GetParam());
        o.staging_bytes = 4ull << 20;  // the schedule holds ~20 MiB: the ring wraps often
        o.block_bytes = 256ull << 10;
        return o;
    }
    void SetUp() override {
        if (std::get<0>(GetParam()) == DiskIo::Direct && !dir_->direct()) {
            GTEST_SKIP() << dir_->skip_reason();
        }
    }
};

TEST_P(DiskStreamModeTest, ReadsMatchFileOverCyclicPasses) {
    DiskStream stream({path_}, options());
    EXPECT_EQ(stream.mode(), std::get<0>(GetParam()));
    const auto reads = odd_schedule(kSize, 1500000, 24, 7);
    const auto t0 = std::chrono::steady_clock::now();
    check_passes(stream, {path_}, reads, 3);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const DiskStreamStats& stats = stream.stats();
    EXPECT_EQ(stats.reads, 3 * reads.size());
    // The waits are part of the passes: more than their wall time is a unit or summing slip.
    EXPECT_LE(stats.wait_seconds, wall);
    if (stream.mode() == DiskIo::Direct) {
        EXPECT_EQ(stream.staging_bytes(), 4ull << 20);
        EXPECT_GE(stats.bytes_read, 3 * sum_bytes(reads));  // whole aligned blocks
    } else {
        EXPECT_EQ(stream.staging_bytes(), 0u);
        EXPECT_EQ(stats.bytes_read, 3 * sum_bytes(reads));
    }
}

TEST_P(DiskStreamModeTest, HeldReadStaysIntactWhileNextIsAcquired) {
    DiskStream stream({path_}, options());
    check_passes(stream, {path_}, odd_schedule(kSize, 1000000, 16, 8), 2, /*hold_two=*/true);
}

TEST_P(DiskStreamModeTest, ReadsAcrossTwoFiles) {
    const std::string second = dir_->file(cat("second_", std::get<1>(GetParam()), ".bin"));
    write_random_file(second, 5 * 4096 + 17, 99);
    DiskStream stream({path_, second}, options());
    std::vector<Read> reads = {{1, 0, 5 * 4096 + 17},
                               {0, 4095, 70000},
                               {1, 4097, 3},
                               {0, kSize - 1, 1},
                               {1, 5 * 4096, 17}};
    check_passes(stream, {path_, second}, reads, 4);
    std::filesystem::remove(second);
}

// One read and a ring several times its size: the same id is in flight more than once.
TEST_P(DiskStreamModeTest, SingleReadScheduleRunsAheadOfItself) {
    DiskStreamOptions o = options();
    o.staging_bytes = 1ull << 20;
    DiskStream stream({path_}, o);
    check_passes(stream, {path_}, {{0, 100003, 200000}}, 12);
}

INSTANTIATE_TEST_SUITE_P(Modes, DiskStreamModeTest,
                         ::testing::Combine(::testing::Values(DiskIo::Direct, DiskIo::Mmap),
                                            ::testing::Values(1, 16)),
                         [](const auto& info) {
                             return cat(disk_io_name(std::get<0>(info.param)), "_qd",
                                        std::get<1>(info.param));
                         });

TEST_F(DiskStreamTest, AutoPicksDirectWhereSupportedElseMmap) {
    DiskStreamOptions o;
    o.staging_bytes = 1ull << 20;
    DiskStream stream({path_}, o);
    EXPECT_EQ(stream.mode(), dir_->direct() ? DiskIo::Direct : DiskIo::Mmap);
    check_passes(stream, {path_}, {{0, 1, 1000}, {0, kSize - 5000, 5000}}, 2);
}

TEST_F(DiskStreamTest, ModeNamesRoundTrip) {
    for (DiskIo mode : {DiskIo::Auto, DiskIo::Direct, DiskIo::Mmap}) {
        EXPECT_EQ(parse_disk_io(disk_io_name(mode)), mode);
    }
    try {
        parse_disk_io("odirect");
        FAIL() << "parse_disk_io accepted 'odirect'";
    } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("odirect"), std::string::npos) << e.what();
    }
}

TEST_F(DiskStreamTest, MissingFileIsSystemErrorNamingIt) {
    const std::string missing = dir_->file("no_such_weights.bin");
    for (DiskIo mode : {DiskIo::Auto, DiskIo::Direct, DiskIo::Mmap}) {
        DiskStreamOptions o;
        o.mode = mode;
        try {
            DiskStream stream({missing}, o);
            FAIL() << "opened a missing file in " << disk_io_name(mode) << " mode";
        } catch (const SystemError& e) {
            EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(supports_direct_io(missing), SystemError);
}

TEST_F(DiskStreamTest, BadOptionsAreArgumentErrors) {
    DiskStreamOptions o;
    o.block_bytes = 5000;
    EXPECT_THROW(DiskStream({path_}, o), ArgumentError);
    o = {};
    o.queue_depth = 0;
    EXPECT_THROW(DiskStream({path_}, o), ArgumentError);
    o = {};
    o.staging_bytes = 100;
    EXPECT_THROW(DiskStream({path_}, o), ArgumentError);
    EXPECT_THROW(DiskStream({}, DiskStreamOptions{}), ArgumentError);
}

class DiskStreamMisuseTest : public DiskStreamTest, public ::testing::WithParamInterface<DiskIo> {
  protected:
    void SetUp() override {
        if (GetParam() == DiskIo::Direct && !dir_->direct()) GTEST_SKIP() << dir_->skip_reason();
        options_.mode = GetParam();
        options_.staging_bytes = 1ull << 20;
    }
    DiskStreamOptions options_;
};

TEST_P(DiskStreamMisuseTest, AddReadOutsideFileOrStaging) {
    DiskStream stream({path_}, options_);
    EXPECT_THROW(stream.add_read(0, kSize - 10, 11), ArgumentError);  // one byte past EOF
    EXPECT_THROW(stream.add_read(0, kSize + 4096, 1), ArgumentError);
    EXPECT_THROW(stream.add_read(0, 0, 0), ArgumentError);
    EXPECT_THROW(stream.add_read(1, 0, 10), ArgumentError);
    EXPECT_THROW(stream.add_read(-1, 0, 10), ArgumentError);
    EXPECT_EQ(stream.add_read(0, kSize - 10, 10), 0);
    // 1 MiB of bytes at an unaligned offset spans 1 MiB + 4096 aligned: one block too many.
    try {
        stream.add_read(0, 100, 1ull << 20);
        FAIL() << "accepted a read larger than the staging memory";
    } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("staging"), std::string::npos) << e.what();
    }
    EXPECT_EQ(stream.add_read(0, 4096, 1ull << 20), 1);  // aligned: fits exactly
}

TEST_P(DiskStreamMisuseTest, AcquireAndReleaseOutOfOrder) {
    DiskStream stream({path_}, options_);
    EXPECT_THROW(stream.acquire(0), ArgumentError);  // nothing scheduled
    for (int i = 0; i < 3; ++i)
        stream.add_read(0, 1000 * i + 1, 5000);
    EXPECT_THROW(stream.release(0), ArgumentError);  // nothing held
    EXPECT_THROW(stream.acquire(1), ArgumentError);
    EXPECT_THROW(stream.acquire(3), ArgumentError);
    EXPECT_NE(stream.acquire(0), nullptr);
    EXPECT_THROW(stream.add_read(0, 0, 10), ArgumentError);  // schedule fixed
    EXPECT_THROW(stream.acquire(0), ArgumentError);          // already held
    EXPECT_THROW(stream.acquire(2), ArgumentError);
    EXPECT_NE(stream.acquire(1), nullptr);
    EXPECT_THROW(stream.release(1), ArgumentError);  // 0 is older
    stream.release(0);
    stream.release(1);
    EXPECT_THROW(stream.release(2), ArgumentError);
    EXPECT_NE(stream.acquire(2), nullptr);
    stream.release(2);
    EXPECT_NE(stream.acquire(0), nullptr);  // cyclic
    stream.release(0);
    EXPECT_EQ(stream.stats().reads, 4u);
}

// Destroying a stream with reads queued, one held, or none started returns (no hang, no crash
// under the sanitizers) and leaves nothing behind that spoils the next stream's reads.
TEST_P(DiskStreamMisuseTest, DestroyWithReadsInFlight) {
    const auto offset = [](int i) { return (i * 999983ull) % (kSize - 300000); };
    const auto t0 = std::chrono::steady_clock::now();
    {
        DiskStream stream({path_}, options_);
        for (int i = 0; i < 8; ++i)
            stream.add_read(0, offset(i), 300000);
        const void* data = stream.acquire(0);  // the rest of the ring is still being read
        ASSERT_NE(data, nullptr);
        EXPECT_EQ(std::memcmp(data, pread_bytes(path_, offset(0), 300000).data(), 300000), 0);
    }
    {
        DiskStream stream({path_}, options_);
        stream.add_read(0, 0, 1);
        EXPECT_EQ(stream.stats().reads, 0u);
    }
    // Eight 300 KB reads: the destructor must cancel or finish them, not wait on a lost one.
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
    DiskStream after({path_}, options_);
    check_passes(after, {path_}, {{0, offset(3), 300000}, {0, 1, 4095}}, 2);
}

INSTANTIATE_TEST_SUITE_P(Modes, DiskStreamMisuseTest,
                         ::testing::Values(DiskIo::Direct, DiskIo::Mmap),
                         [](const auto& info) { return std::string(disk_io_name(info.param)); });

TEST_F(DiskStreamTest, DirectHoldingMoreThanStagingThrowsInsteadOfHanging) {
    if (!dir_->direct()) GTEST_SKIP() << dir_->skip_reason();
    DiskStreamOptions o;
    o.mode = DiskIo::Direct;
    o.staging_bytes = 64 << 10;
    DiskStream stream({path_}, o);
    for (int i = 0; i < 3; ++i)
        stream.add_read(0, i * 40960ull, 40960);
    stream.acquire(0);
    EXPECT_THROW(stream.acquire(1), ArgumentError);  // 0 holds 40 of the 64 KiB
    stream.release(0);
    EXPECT_NE(stream.acquire(1), nullptr);
}

// Resident pages of `path` in the page cache.
uint64_t resident_pages(const std::string& path, uint64_t size) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return ~0ull;
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> in_core((size + page - 1) / page);
    uint64_t n = 0;
    if (::mincore(map, size, in_core.data()) == 0) {
        for (unsigned char c : in_core)
            n += c & 1;
    }
    ::munmap(map, size);
    return n;
}

void evict(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
}

TEST_F(DiskStreamTest, DirectModeLeavesPageCacheAlone) {
    if (!dir_->direct()) GTEST_SKIP() << dir_->skip_reason();
    if (fs_name(path_) == "tmpfs") GTEST_SKIP() << "tmpfs files live in the page cache";
    evict(path_);
    const uint64_t before = resident_pages(path_, kSize);
    if (before > 16) GTEST_SKIP() << "could not evict the file (" << before << " pages resident)";
    DiskStreamOptions o;
    o.mode = DiskIo::Direct;
    o.staging_bytes = 2ull << 20;
    DiskStream stream({path_}, o);
    for (uint64_t off = 0; off < kSize; off += 1ull << 20) {
        stream.add_read(0, off, std::min<uint64_t>(1ull << 20, kSize - off));
    }
    const int n = static_cast<int>((kSize + (1ull << 20) - 1) >> 20);
    for (int id = 0; id < n; ++id) {
        stream.acquire(id);
        stream.release(id);
    }
    EXPECT_GE(stream.stats().bytes_read, kSize);
    EXPECT_LE(resident_pages(path_, kSize), before + 16);
}

TEST_F(DiskStreamTest, MmapModeDropsReleasedPages) {
    if (fs_name(path_) == "tmpfs") GTEST_SKIP() << "tmpfs files live in the page cache";
    evict(path_);
    const uint64_t before = resident_pages(path_, kSize);
    if (before > 16) GTEST_SKIP() << "could not evict the file (" << before << " pages resident)";
    DiskStreamOptions o;
    o.mode = DiskIo::Mmap;
    o.staging_bytes = 2ull << 20;
    DiskStream stream({path_}, o);
    // Gaps between the reads, so the page-cache readahead around them is not all released.
    const uint64_t step = 1ull << 20, bytes = 700000;
    int n = 0;
    for (uint64_t off = 0; off + bytes <= kSize; off += step, ++n)
        stream.add_read(0, off, bytes);
    for (int id = 0; id < n; ++id) {
        stream.acquire(id);
        stream.release(id);
    }
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t resident = resident_pages(path_, kSize);
    std::cout << "mmap pass: " << resident << " of " << kSize / page << " pages resident\n";
    EXPECT_LT(resident * page, kSize / 2);
}

}  // namespace
}  // namespace strata
