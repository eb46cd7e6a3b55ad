// Mmap mode, for file systems without O_DIRECT: each file is mapped once; the reads ahead are
// announced with MADV_WILLNEED (up to staging_bytes of them), and a released read's pages are
// dropped from the mapping and the page cache, so streamed weights do not pile up in RAM.
#include "engine/core/error.h"
#include "offload/disk_stream_engine.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

namespace strata {
namespace {

constexpr int kPopulateRead = 22;  // MADV_POPULATE_READ, absent from older headers

struct Mapping {
    uint8_t* base = nullptr;
    uint64_t size = 0;
};

// A read announced to the kernel: its page-aligned span in one file.
struct Advised {
    uint64_t seq = 0;
    int file = 0;
    uint64_t begin = 0;
    uint64_t end = 0;
};

class MmapEngine final : public DiskStreamEngine {
  public:
    MmapEngine(const std::vector<std::string>& paths, const DiskStreamOptions& options)
        : ahead_limit_(align_up(options.staging_bytes)),
          page_(static_cast<uint64_t>(::sysconf(_SC_PAGESIZE))) {
        try {
            map_all(paths);
        } catch (...) {
            unmap_all();
            throw;
        }
    }

    ~MmapEngine() override { unmap_all(); }

    uint64_t file_size(int file) const override { return maps_[file].size; }
    uint64_t staging_bytes() const override { return 0; }
    uint64_t bytes_read() const override { return bytes_read_; }

    void start(std::vector<DiskRead> reads) override {
        reads_ = std::move(reads);
        advise_ahead();
    }

    const void* acquire(uint64_t seq) override {
        // Held reads may fill the look-ahead; the mapping has room regardless, so go past it.
        while (issue_seq_ <= seq)
            advise(issue_seq_++);
        advise_ahead();
        const DiskRead& read = reads_[seq % reads_.size()];
        const uint8_t* data = maps_[read.file].base + read.offset;
        // Fault the pages in here, so the consumer finds them resident and the wait is counted
        // by acquire like in direct mode. MADV_POPULATE_READ (Linux 5.14) maps them in one
        // call, several times faster than a fault per page; older kernels get the touches.
        const uint64_t begin = page_begin(read);
        if (!populate_ ||
            ::madvise(maps_[read.file].base + begin, page_end(read) - begin, kPopulateRead) != 0) {
            populate_ = false;
            const volatile uint8_t* touch = data;
            (void)touch[0];
            for (uint64_t i = page_ - (read.offset % page_); i < read.bytes; i += page_) {
                (void)touch[i];
            }
        }
        bytes_read_ += read.bytes;
        return data;
    }

    void release(uint64_t seq) override {
        STRATA_INVARIANT(!advised_.empty() && advised_.front().seq == seq);
        const Advised done = advised_.front();
        advised_.pop_front();
        ahead_bytes_ -= done.end - done.begin;
        uint8_t* base = maps_[done.file].base;
        ::madvise(base + done.begin, done.end - done.begin, MADV_DONTNEED);
        // Keep a page shared with the next read announced in the same file in the cache.
        uint64_t drop_end = done.end;
        for (const Advised& next : advised_) {
            if (next.file == done.file && next.begin < drop_end && next.end > done.begin) {
                drop_end = std::max(done.begin, std::min(drop_end, next.begin));
            }
        }
        if (drop_end > done.begin) {
            ::posix_fadvise(fds_[done.file].get(), static_cast<off_t>(done.begin),
                            static_cast<off_t>(drop_end - done.begin), POSIX_FADV_DONTNEED);
        }
        advise_ahead();
    }

  private:
    void map_all(const std::vector<std::string>& paths) {
        for (const std::string& path : paths) {
            fds_.push_back(open_file(path, O_RDONLY));
            Mapping map;
            map.size = file_size_of(fds_.back().get(), path);
            if (map.size > 0) {
                void* p = ::mmap(nullptr, map.size, PROT_READ, MAP_SHARED, fds_.back().get(), 0);
                if (p == MAP_FAILED) {
                    const int err = errno;
                    throw SystemError(cat("cannot mmap '", path, "' (", map.size,
                                          " bytes): ", std::strerror(err)));
                }
                map.base = static_cast<uint8_t*>(p);
            }
            maps_.push_back(map);
        }
    }

    void advise_ahead() {
        while (true) {
            const DiskRead& read = reads_[issue_seq_ % reads_.size()];
            const uint64_t span = page_end(read) - page_begin(read);
            if (!advised_.empty() && ahead_bytes_ + span > ahead_limit_) return;
            advise(issue_seq_++);
        }
    }

    void advise(uint64_t seq) {
        const DiskRead& read = reads_[seq % reads_.size()];
        const Advised a{seq, read.file, page_begin(read), page_end(read)};
        // Advice only: a refusal costs speed, never correctness.
        ::madvise(maps_[a.file].base + a.begin, a.end - a.begin, MADV_WILLNEED);
        advised_.push_back(a);
        ahead_bytes_ += a.end - a.begin;
    }

    uint64_t page_begin(const DiskRead& read) const { return read.offset / page_ * page_; }
    uint64_t page_end(const DiskRead& read) const {
        return (read.offset + read.bytes + page_ - 1) / page_ * page_;
    }

    void unmap_all() {
        for (const Mapping& map : maps_) {
            if (map.base != nullptr) ::munmap(map.base, map.size);
        }
        maps_.clear();
    }

    const uint64_t ahead_limit_;
    const uint64_t page_;
    std::vector<UniqueFd> fds_;
    std::vector<Mapping> maps_;
    std::vector<DiskRead> reads_;
    std::deque<Advised> advised_;  // announced, not yet released; front is the oldest
    uint64_t issue_seq_ = 0;
    uint64_t ahead_bytes_ = 0;
    uint64_t bytes_read_ = 0;
    bool populate_ = true;  // MADV_POPULATE_READ works here
};

}  // namespace

std::unique_ptr<DiskStreamEngine> make_mmap_engine(const std::vector<std::string>& paths,
                                                   const DiskStreamOptions& options) {
    return std::make_unique<MmapEngine>(paths, options);
}

}  // namespace strata
