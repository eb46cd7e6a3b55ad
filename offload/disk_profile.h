// The disk half of the hardware profile: O_DIRECT read bandwidth of the model's file system
// through DiskStream (the reader the runtime uses) at a small grid of queue depths and block
// sizes, the configuration chosen from that sweep, and the DiskStream settings a run derives
// from a profile. Where O_DIRECT is refused (tmpfs ...) there is no queue: one mmap read.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "offload/disk_stream.h"

namespace strata {

struct HardwareProfile;

// One configuration of the sweep and its measured rate (GB/s, G = 1e9; 0: not measured).
struct DiskPoint {
    int queue_depth = 0;
    uint64_t block_bytes = 0;
    double gbs = 0;
    bool operator==(const DiskPoint&) const = default;
};

// queue depths {1, 4, 8, 16, 32} x blocks {256 KiB, 1 MiB, 4 MiB}, less the points with very
// little (qd 1 x 256 KiB) or very much (more than 32 MiB) in flight: 11 points, the runtime's
// old default (8 x 1 MiB) among the first.
std::vector<DiskPoint> default_disk_grid();

struct DiskMeasureOptions {
    std::vector<DiskPoint> grid = default_disk_grid();  // gbs ignored
    // Direct: each point times this many bytes (at least twice what it keeps in flight), from
    // a region of the file no other point reads. Mmap: the one read's bytes.
    uint64_t point_bytes = 64ull << 20;
    uint64_t mmap_bytes = 128ull << 20;
    // The whole sweep (not writing the probe file): a point still running at the deadline is
    // dropped and later ones are not started. The first point always runs to its end.
    std::chrono::duration<double> budget{3.0};
};

struct DiskReadMeasurement {
    double gbs = 0;          // the chosen point's rate, read again after the sweep (mmap: the one rate)
    bool direct_io = false;  // O_DIRECT (else through mmap, page cache dropped first)
    int queue_depth = 0;     // the chosen point; 0 in mmap mode
    uint64_t block_bytes = 0;
    std::vector<DiskPoint> sweep;  // the points measured, in grid order; empty in mmap mode
};

// Read bandwidth of the file system holding `path_on_fs`. A regular file large enough for the
// largest point is read in place (the model file itself: nothing is written; regions wrap
// round a file too small for all of them); otherwise a temporary file (the sweep's regions, at
// most 256 MiB unless one region is larger) is written in that folder (or the file's folder),
// dropped from the page cache
// (posix_fadvise DONTNEED), read through DiskStream and deleted. SystemError when the folder
// is not writable; ArgumentError for an empty grid or a point DiskStream refuses.
// The rate recorded when the disk cannot be measured: very slow, so the planner avoids it, and
// never 0 (a profile with a zero rate is refused as damaged).
constexpr double kUnmeasuredDiskGbs = 0.01;

DiskReadMeasurement measure_disk_read_gbs(const std::string& path_on_fs,
                                          const DiskMeasureOptions& options = {});

// Copies `m` into the profile's disk fields.
void set_disk(HardwareProfile& profile, const DiskReadMeasurement& m);

// The point to use: the fastest, except that a point within 3% of it that keeps fewer bytes in
// flight (then: fewer requests) wins, since staging memory is RAM the weights could use.
// ArgumentError when `sweep` is empty.
DiskPoint choose_disk_point(const std::vector<DiskPoint>& sweep);

// The DiskStream settings of a run whose largest streamed read is `largest_read` bytes: `mode`;
// a staging ring of two such reads (one in use, one arriving) — the RAM the budget counts —;
// and the profile's chosen queue depth and block where it has one (measured with O_DIRECT) and
// `mode` is not Mmap, else DiskStream's defaults. The queue is narrowed (fewer requests, then
// smaller blocks) to what the ring holds beside one read in use, so a small model's ring does
// not grow to the queue. `profile` may be null.
DiskStreamOptions disk_stream_options(DiskIo mode, uint64_t largest_read, const HardwareProfile* profile);

// One line on the profile's disk rate and how it was read, e.g.
// "1.9 GB/s (O_DIRECT, 16 x 1 MiB in flight)", "5.2 GB/s (mmap)", "not measured".
std::string describe_disk(const HardwareProfile& profile);
// "256 KiB", "1 MiB", "1.50 MiB".
std::string format_block_bytes(uint64_t bytes);

}  // namespace strata
