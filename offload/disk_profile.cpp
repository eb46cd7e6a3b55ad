// Disk read sweep through DiskStream, the choice of a configuration and the run's DiskStream
// settings (disk_profile.h).
#include "offload/disk_profile.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "engine/core/error.h"
#include "engine/core/temp_files.h"
#include "engine/core/timing.h"
#include "offload/disk_stream_engine.h"
#include "offload/hardware_profile.h"
#include "offload/tier.h"

namespace strata {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kAlign = kDiskAlign;
constexpr uint64_t kMaxRead = 8 * kMiB;
constexpr uint64_t kProbeBytes = 256 * kMiB;
constexpr int kConfirmReads = 2;  // regions the chosen point reads again for its rate

uint64_t round_up(uint64_t x, uint64_t to) {
    return (x + to - 1) / to * to;
}

// How one point lays out its reads. The stream reads `measured` timed reads of `read` bytes,
// then `extra` untimed ones that keep the queue full until the last timed read has arrived;
// the ring holds the queue beside one read in use, so the cyclic schedule cannot come round
// to the first read (already read, maybe cached by the device) before the timing ends.
struct PointLayout {
    uint64_t read = 0;
    uint64_t staging = 0;
    int measured = 0;
    int extra = 0;
    uint64_t region() const { return read * static_cast<uint64_t>(measured + extra); }
};

PointLayout layout_of(const DiskPoint& p, uint64_t point_bytes) {
    if (p.queue_depth < 1 || p.block_bytes == 0 || p.block_bytes % kAlign != 0) {
        throw ArgumentError(cat("disk sweep point ", p.queue_depth, " x ", p.block_bytes,
                                " bytes: expected a queue depth >= 1 and a block a multiple of ", kAlign));
    }
    const uint64_t in_flight = static_cast<uint64_t>(p.queue_depth) * p.block_bytes;
    PointLayout l;
    l.read = round_up(std::max(p.block_bytes, std::min(kMaxRead, round_up(point_bytes, kAlign))), p.block_bytes);
    l.staging = round_up(in_flight, l.read) + l.read;
    l.measured = static_cast<int>((std::max(point_bytes, 2 * in_flight) + l.read - 1) / l.read);
    l.extra = static_cast<int>(l.staging / l.read);
    return l;
}

// A new file in `dir` of `bytes` of incompressible data; its path. Named as a temporary file
// (temp_files.h): removed on SIGINT/SIGTERM, and by the next measurement if a kill left it.
std::string write_probe_file(const fs::path& dir, uint64_t bytes, int& slot) {
    const std::string name = (dir / "strata-disk-probe").string();
    remove_stale_temp_files(name);
    const std::string path = temp_path_for(name);
    slot = register_temp_file(path);  // before the file exists: a signal mid-write removes it
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        unregister_temp_file(slot);
        throw SystemError(cat("cannot measure the disk: cannot create ", path, ": ",
                              std::strerror(errno)));
    }
    std::vector<uint64_t> chunk((8u << 20) / 8);
    std::mt19937_64 rng(99);
    for (uint64_t& w : chunk) w = rng();
    uint64_t done = 0;
    while (done < bytes) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes - done, chunk.size() * 8));
        const ssize_t put = ::write(fd, chunk.data(), n);
        if (put <= 0) {
            const int err = errno;
            ::close(fd);
            fs::remove(path);
            unregister_temp_file(slot);
            throw SystemError(cat("cannot measure the disk: writing ", path, ": ", std::strerror(err)));
        }
        done += static_cast<uint64_t>(put);
        chunk[0] += 1;  // no two chunks alike (deduplicating file systems)
    }
    ::fsync(fd);
    ::close(fd);
    return path;
}

void drop_from_page_cache(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
}

// The file the measurement reads and whether it is a probe to delete afterwards.
struct Target {
    std::string file;
    uint64_t size = 0;
    bool temporary = false;
    int slot = -1;  // temp_files.h registration of a probe
};

// Removes a probe file when the measurement ends, however it ends.
class ProbeCleanup {
  public:
    explicit ProbeCleanup(const Target& t) : target_(t) {}
    ~ProbeCleanup() {
        if (!target_.temporary) return;
        std::error_code ec;
        fs::remove(target_.file, ec);
        unregister_temp_file(target_.slot);
    }
    ProbeCleanup(const ProbeCleanup&) = delete;
    ProbeCleanup& operator=(const ProbeCleanup&) = delete;

  private:
    const Target& target_;
};

Target choose_target(const std::string& path_on_fs, uint64_t largest_region, uint64_t all_regions) {
    std::error_code ec;
    if (fs::is_regular_file(path_on_fs, ec)) {
        const uint64_t size = fs::file_size(path_on_fs, ec);
        if (!ec && size >= largest_region) return {path_on_fs, size, false};
    }
    fs::path dir(path_on_fs);
    if (!fs::is_directory(dir, ec)) dir = dir.has_parent_path() ? dir.parent_path() : ".";
    Target t{"", all_regions, true};
    t.file = write_probe_file(dir, all_regions, t.slot);
    return t;
}

// Bytes/s of reading [offset, offset + measured reads) in order with `point`'s queue; 0 when
// `deadline` passed first (with `may_stop`).
double time_point(const std::string& file, uint64_t offset, const DiskPoint& point, const PointLayout& l,
                  Clock::time_point deadline, bool may_stop) {
    DiskStreamOptions o;
    o.mode = DiskIo::Direct;
    o.queue_depth = point.queue_depth;
    o.block_bytes = point.block_bytes;
    o.staging_bytes = l.staging;
    DiskStream stream({file}, o);
    for (int i = 0; i < l.measured + l.extra; ++i) {
        stream.add_read(0, offset + static_cast<uint64_t>(i) * l.read, l.read);
    }
    const auto t0 = Clock::now();
    for (int i = 0; i < l.measured; ++i) {
        stream.acquire(i);
        stream.release(i);
        if (may_stop && Clock::now() > deadline) return 0;
    }
    return static_cast<double>(l.read * static_cast<uint64_t>(l.measured)) / seconds_since(t0);
}

// Mmap mode, as DiskStream streams there: 8 MiB reads, 32 MiB read ahead.
double time_mmap(const std::string& file, uint64_t bytes, Clock::time_point deadline) {
    const uint64_t read = std::min(kMaxRead, round_up(bytes, kAlign));
    DiskStreamOptions o;
    o.mode = DiskIo::Mmap;
    o.staging_bytes = 4 * read;
    DiskStream stream({file}, o);
    const int n = static_cast<int>(std::max<uint64_t>(1, bytes / read));
    for (int i = 0; i < n; ++i) stream.add_read(0, static_cast<uint64_t>(i) * read, read);
    const auto t0 = Clock::now();
    int done = 0;
    while (done < n) {
        stream.acquire(done);
        stream.release(done);
        ++done;
        if (Clock::now() > deadline) break;  // the one measurement: keep what was read
    }
    return static_cast<double>(read * static_cast<uint64_t>(done)) / seconds_since(t0);
}

DiskReadMeasurement measure_on(const Target& target, const DiskMeasureOptions& options,
                               const std::vector<PointLayout>& layouts) {
    DiskReadMeasurement out;
    drop_from_page_cache(target.file);
    out.direct_io = supports_direct_io(target.file);
    drop_from_page_cache(target.file);  // the probe above read one block
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(options.budget);
    if (!out.direct_io) {
        const uint64_t bytes = std::min(options.mmap_bytes, target.size / kAlign * kAlign);
        out.gbs = time_mmap(target.file, bytes, deadline) / 1e9;
        return out;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < options.grid.size(); ++i) {
        if (i > 0 && Clock::now() > deadline) break;
        const PointLayout& l = layouts[i];
        if (offset + l.region() > target.size) offset = 0;  // a model file smaller than the sweep
        const double bytes_per_s = time_point(target.file, offset, options.grid[i], l, deadline, i > 0);
        offset += l.region();
        if (bytes_per_s <= 0) break;
        out.sweep.push_back({options.grid[i].queue_depth, options.grid[i].block_bytes, bytes_per_s / 1e9});
    }
    const DiskPoint best = choose_disk_point(out.sweep);
    out.queue_depth = best.queue_depth;
    out.block_bytes = best.block_bytes;
    // The fastest of several noisy points is luckier than the point itself (on the GPU machine's
    // disk the sweep read 1.04-1.35 GB/s, and decode from disk ran 24% below what 1.35 GB/s
    // predicts): the chosen point is read again, and that independent read is its rate.
    size_t chosen = 0;  // the sweep holds the grid's first points, in its order
    while (out.sweep[chosen].queue_depth != best.queue_depth || out.sweep[chosen].block_bytes != best.block_bytes) {
        ++chosen;
    }
    const PointLayout& l = layouts[chosen];
    double seconds = 0;
    for (int r = 0; r < kConfirmReads; ++r) {
        if (offset + l.region() > target.size) offset = 0;
        const double bytes_per_s = time_point(target.file, offset, options.grid[chosen], l, deadline, false);
        offset += l.region();
        seconds += static_cast<double>(l.read * static_cast<uint64_t>(l.measured)) / bytes_per_s;
    }
    out.gbs = static_cast<double>(l.read * static_cast<uint64_t>(l.measured)) * kConfirmReads / seconds / 1e9;
    return out;
}

}  // namespace

std::vector<DiskPoint> default_disk_grid() {
    std::vector<DiskPoint> grid;
    for (int qd : {8, 1, 4, 16, 32}) grid.push_back({qd, kMiB, 0});
    for (int qd : {4, 16, 32}) grid.push_back({qd, 256 << 10, 0});
    for (int qd : {1, 4, 8}) grid.push_back({qd, 4 * kMiB, 0});
    return grid;
}

DiskReadMeasurement measure_disk_read_gbs(const std::string& path_on_fs, const DiskMeasureOptions& options) {
    if (options.grid.empty()) throw ArgumentError("disk measurement: the grid has no points");
    if (options.point_bytes < kAlign || options.mmap_bytes < kAlign) {
        throw ArgumentError(cat("disk measurement: point_bytes = ", options.point_bytes, " and mmap_bytes = ",
                                options.mmap_bytes, " must be at least ", kAlign));
    }
    std::vector<PointLayout> layouts;
    uint64_t largest = round_up(options.mmap_bytes, kAlign), all = 0;
    for (const DiskPoint& p : options.grid) {
        layouts.push_back(layout_of(p, options.point_bytes));
        largest = std::max(largest, layouts.back().region());
        all += layouts.back().region();
    }
    // A probe file need not hold every region: its size is bounded as the single read's was.
    const Target target = choose_target(path_on_fs, largest, std::max(largest, std::min(all, kProbeBytes)));
    const ProbeCleanup cleanup(target);
    return measure_on(target, options, layouts);
}

void set_disk(HardwareProfile& p, const DiskReadMeasurement& m) {
    p.disk_read_gbs = m.gbs;
    p.disk_direct_io = m.direct_io;
    p.disk_sweep = m.sweep;
    p.disk_queue_depth = m.queue_depth;
    p.disk_block_bytes = m.block_bytes;
}

DiskPoint choose_disk_point(const std::vector<DiskPoint>& sweep) {
    if (sweep.empty()) throw ArgumentError("choose_disk_point: no points measured");
    double fastest = 0;
    for (const DiskPoint& p : sweep) fastest = std::max(fastest, p.gbs);
    const auto in_flight = [](const DiskPoint& p) { return static_cast<uint64_t>(p.queue_depth) * p.block_bytes; };
    const DiskPoint* best = nullptr;
    for (const DiskPoint& p : sweep) {
        if (p.gbs < 0.97 * fastest) continue;
        if (best == nullptr || in_flight(p) < in_flight(*best) ||
            (in_flight(p) == in_flight(*best) && p.queue_depth < best->queue_depth)) {
            best = &p;
        }
    }
    return *best;
}

DiskStreamOptions disk_stream_options(DiskIo mode, uint64_t largest_read, const HardwareProfile* profile) {
    DiskStreamOptions o;
    o.mode = mode;
    // Two of the largest read, plus the alignment slack of O_DIRECT spans.
    o.staging_bytes = 2 * largest_read + 64 * 1024;
    if (mode == DiskIo::Mmap || profile == nullptr || profile->disk_queue_depth < 1) return o;
    o.queue_depth = profile->disk_queue_depth;
    o.block_bytes = profile->disk_block_bytes;
    // Ring room beside one read in use (its 4096-aligned span).
    const uint64_t room = o.staging_bytes - (round_up(largest_read, kAlign) + kAlign);
    if (o.block_bytes > room) o.block_bytes = std::max(kAlign, room / kAlign * kAlign);
    const uint64_t fit = room / o.block_bytes;
    o.queue_depth = static_cast<int>(std::clamp<uint64_t>(fit, 1, static_cast<uint64_t>(o.queue_depth)));
    return o;
}

std::string format_block_bytes(uint64_t bytes) {
    if (bytes >= kMiB && bytes % kMiB == 0) return cat(bytes / kMiB, " MiB");
    if (bytes >= 1024 && bytes % 1024 == 0 && bytes < kMiB) return cat(bytes / 1024, " KiB");
    return format_bytes(bytes);
}

std::string describe_disk(const HardwareProfile& p) {
    if (p.disk_read_gbs <= 0) return "not measured";
    char rate[32];
    std::snprintf(rate, sizeof rate, "%.1f GB/s", p.disk_read_gbs);
    if (!p.disk_direct_io) return cat(rate, " (mmap)");
    if (p.disk_queue_depth < 1) return cat(rate, " (O_DIRECT)");
    return cat(rate, " (O_DIRECT, ", p.disk_queue_depth, " x ", format_block_bytes(p.disk_block_bytes),
               " in flight)");
}

}  // namespace strata
