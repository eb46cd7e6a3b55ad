// DiskStream: reads the DISK-tier weights at each use, in the order the layer program needs
// them, into aligned staging buffers — with io_uring and O_DIRECT (so streamed pages never pile
// up in the page cache), or from a memory-mapped file (madvise WILLNEED ahead, DONTNEED behind)
// where O_DIRECT is not available (tmpfs, some network and copy-on-write filesystems).
//
// Use: add every read of one forward pass once, in program order (add_read); then for each use
// acquire(id) → bytes → release(id). The schedule is cyclic: after the last read the stream
// goes on with the first one (the next token), so the disk stays busy across tokens. Reads run
// ahead of the consumer as far as the staging memory allows.
//
// Several reads may be held at once (acquire 3, acquire 4, release 3 ...), but acquires and
// releases each go in schedule order, and what is held stays in the staging memory, so holding
// more than fits stalls the stream (acquire then throws ArgumentError rather than hang).
//
// Not thread-safe: one consumer thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

enum class DiskIo { Auto, Direct, Mmap };

std::string_view disk_io_name(DiskIo mode);   // "auto", "direct", "mmap"
DiskIo parse_disk_io(std::string_view name);  // throws ArgumentError

struct DiskStreamOptions {
    // Auto: Direct where every file's file system takes O_DIRECT and io_uring is allowed.
    DiskIo mode = DiskIo::Auto;
    // Direct: the staging ring, counted in the RAM budget. Mmap: how far WILLNEED runs ahead.
    // Every read's 4096-aligned span must fit in it.
    uint64_t staging_bytes = 256ull << 20;
    int queue_depth = 8;                    // io_uring reads in flight
    uint64_t block_bytes = 1ull << 20;      // bytes per read request, a multiple of 4096
};

struct DiskStreamStats {
    uint64_t bytes_read = 0;  // from the files, 4096-aligned (direct) or touched (mmap)
    uint64_t reads = 0;       // acquire() calls served
    double wait_seconds = 0;  // time acquire() spent waiting for the disk
};

class DiskStream {
  public:
    // `paths`: the model's files (one per shard); reads name a file by its index.
    DiskStream(std::vector<std::string> paths, const DiskStreamOptions& options);
    ~DiskStream();
    DiskStream(const DiskStream&) = delete;
    DiskStream& operator=(const DiskStream&) = delete;

    // Appends a read of `bytes` at `offset` of file `file` to the cyclic schedule; returns its
    // id (0, 1, 2 ... in order). ArgumentError when one read is larger than the staging memory
    // allows or lies outside the file. Only before the first acquire().
    int add_read(int file, uint64_t offset, uint64_t bytes);

    // Waits until read `id` is in memory and returns its first byte (valid until release(id)).
    // Reads must be acquired in schedule order (cyclically); anything else is ArgumentError,
    // as is acquiring an id still held. SystemError when the read failed (file, offset, errno).
    // In mmap mode the pages are faulted in here, so the wait is counted where it happens.
    const void* acquire(int id);
    // The bytes of `id` may be overwritten: the stream goes on reading ahead. Releases go in
    // the order of the acquires; anything else is ArgumentError.
    void release(int id);

    DiskIo mode() const;             // Direct or Mmap (never Auto)
    uint64_t staging_bytes() const;  // memory held for staging (0 in mmap mode)
    const DiskStreamStats& stats() const;

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

// Whether `path`'s file system accepts O_DIRECT reads (opens and reads one aligned block).
// SystemError when the file cannot be opened at all.
bool supports_direct_io(const std::string& path);

}  // namespace strata
