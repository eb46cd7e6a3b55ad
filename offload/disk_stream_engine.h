// The two ways DiskStream brings reads into memory (io_uring + O_DIRECT, or mmap), behind one
// small interface. Internal to offload/: DiskStream checks the schedule and the acquire/release
// order, an engine only moves bytes. Reads are named by their issue sequence number `seq`
// (id = seq % n_reads), since a short schedule can have the same id in flight twice.
#pragma once

#include "offload/disk_stream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace strata {

inline constexpr uint64_t kDiskAlign = 4096;  // O_DIRECT offset, length and memory alignment

inline uint64_t align_down(uint64_t x) {
    return x & ~(kDiskAlign - 1);
}
inline uint64_t align_up(uint64_t x) {
    return align_down(x + kDiskAlign - 1);
}

struct DiskRead {
    int file = 0;
    uint64_t offset = 0;
    uint64_t bytes = 0;
};

class DiskStreamEngine {
  public:
    virtual ~DiskStreamEngine() = default;

    virtual uint64_t file_size(int file) const = 0;
    virtual uint64_t staging_bytes() const = 0;
    // The schedule is fixed from here on; the engine starts reading ahead.
    virtual void start(std::vector<DiskRead> reads) = 0;
    // Blocks until read `seq` is in memory. seq goes up by one each call; the caller checks.
    virtual const void* acquire(uint64_t seq) = 0;
    // The oldest acquired, not yet released seq.
    virtual void release(uint64_t seq) = 0;
    virtual uint64_t bytes_read() const = 0;
};

// Both open every path up front; SystemError names the file that fails.
std::unique_ptr<DiskStreamEngine> make_direct_engine(const std::vector<std::string>& paths,
                                                     const DiskStreamOptions& options);
std::unique_ptr<DiskStreamEngine> make_mmap_engine(const std::vector<std::string>& paths,
                                                   const DiskStreamOptions& options);

// Whether this process may set up an io_uring (seccomp or sysctl can forbid it).
bool io_uring_available();

// An owned file descriptor, closed on destruction.
class UniqueFd {
  public:
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    UniqueFd& operator=(UniqueFd&&) = delete;
    ~UniqueFd();
    int get() const { return fd_; }

  private:
    int fd_;
};

// open(2) that throws SystemError with the path and strerror.
UniqueFd open_file(const std::string& path, int flags);
uint64_t file_size_of(int fd, const std::string& path);

}  // namespace strata
