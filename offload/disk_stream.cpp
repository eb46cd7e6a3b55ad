// DiskStream's front: mode choice, the schedule and its checks, acquire/release order and
// stats. The bytes move in disk_stream_direct.cpp (io_uring) or disk_stream_mmap.cpp.
#include "offload/disk_stream.h"

#include "engine/core/error.h"
#include "offload/disk_stream_engine.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace strata {

std::string_view disk_io_name(DiskIo mode) {
    switch (mode) {
        case DiskIo::Auto:
            return "auto";
        case DiskIo::Direct:
            return "direct";
        case DiskIo::Mmap:
            return "mmap";
    }
    return "?";
}

DiskIo parse_disk_io(std::string_view name) {
    for (DiskIo mode : {DiskIo::Auto, DiskIo::Direct, DiskIo::Mmap}) {
        if (name == disk_io_name(mode)) return mode;
    }
    throw ArgumentError(cat("unknown disk io mode '", name, "': expected auto, direct or mmap"));
}

UniqueFd::~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
}

UniqueFd open_file(const std::string& path, int flags) {
    int fd;
    do {
        fd = ::open(path.c_str(), flags | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) throw SystemError(cat("cannot open '", path, "': ", std::strerror(errno)));
    return UniqueFd(fd);
}

uint64_t file_size_of(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        throw SystemError(cat("cannot stat '", path, "': ", std::strerror(errno)));
    }
    return static_cast<uint64_t>(st.st_size);
}

bool supports_direct_io(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0 && errno == EINVAL) return false;
    if (fd < 0) throw SystemError(cat("cannot open '", path, "': ", std::strerror(errno)));
    void* block = std::aligned_alloc(kDiskAlign, kDiskAlign);
    ssize_t got;
    do {
        got = ::pread(fd, block, kDiskAlign, 0);
    } while (got < 0 && errno == EINTR);
    const int err = errno;
    std::free(block);
    ::close(fd);
    // EINVAL: the file system opened the file but refuses unbuffered or 4096-aligned reads.
    if (got >= 0) return true;
    if (err == EINVAL) return false;
    throw SystemError(cat("cannot read '", path, "' at offset 0: ", std::strerror(err)));
}

struct DiskStream::Impl {
    std::vector<std::string> paths;
    DiskIo mode = DiskIo::Mmap;
    uint64_t staging_limit = 0;  // largest aligned span a read may have
    std::unique_ptr<DiskStreamEngine> engine;
    std::vector<DiskRead> reads;
    bool started = false;
    uint64_t acquire_seq = 0;  // next seq to acquire
    uint64_t release_seq = 0;  // oldest held seq; [release_seq, acquire_seq) are held
    DiskStreamStats stats;
};

namespace {

void check_options(const DiskStreamOptions& options) {
    if (options.staging_bytes < kDiskAlign) {
        throw ArgumentError(cat("disk stream staging_bytes = ", options.staging_bytes,
                                ": needs at least ", kDiskAlign));
    }
    if (options.queue_depth < 1 || options.queue_depth > 4096) {
        throw ArgumentError(
            cat("disk stream queue_depth = ", options.queue_depth, ": expected 1 to 4096"));
    }
    if (options.block_bytes == 0 || options.block_bytes % kDiskAlign != 0 ||
        options.block_bytes > (1ull << 30)) {
        throw ArgumentError(cat("disk stream block_bytes = ", options.block_bytes,
                                ": expected a multiple of ", kDiskAlign, " up to 1 GiB"));
    }
}

DiskIo resolve_mode(DiskIo mode, const std::vector<std::string>& paths) {
    if (mode != DiskIo::Auto) return mode;
    for (const std::string& path : paths) {
        if (!supports_direct_io(path)) return DiskIo::Mmap;
    }
    return io_uring_available() ? DiskIo::Direct : DiskIo::Mmap;
}

}  // namespace

DiskStream::DiskStream(std::vector<std::string> paths, const DiskStreamOptions& options)
    : impl_(std::make_unique<Impl>()) {
    check_options(options);
    if (paths.empty()) throw ArgumentError("disk stream: no files given");
    impl_->mode = resolve_mode(options.mode, paths);
    impl_->staging_limit = align_up(options.staging_bytes);
    impl_->engine = impl_->mode == DiskIo::Direct ? make_direct_engine(paths, options)
                                                  : make_mmap_engine(paths, options);
    impl_->paths = std::move(paths);
}

DiskStream::~DiskStream() = default;

int DiskStream::add_read(int file, uint64_t offset, uint64_t bytes) {
    Impl& s = *impl_;
    if (s.started) {
        throw ArgumentError("disk stream add_read after the first acquire: the schedule is fixed");
    }
    if (file < 0 || file >= static_cast<int>(s.paths.size())) {
        throw ArgumentError(cat("disk stream add_read: file index ", file, " out of range (",
                                s.paths.size(), " files)"));
    }
    const std::string& path = s.paths[file];
    const uint64_t size = s.engine->file_size(file);
    if (bytes == 0 || bytes > size || offset > size - bytes) {
        throw ArgumentError(cat("disk stream add_read: ", bytes, " bytes at offset ", offset,
                                " of '", path, "' lie outside the file (", size, " bytes)"));
    }
    const uint64_t span = align_up(offset + bytes) - align_down(offset);
    if (span > s.staging_limit) {
        throw ArgumentError(cat(
            "disk stream add_read: ", bytes, " bytes at offset ", offset, " of '", path, "' need ",
            span, " bytes of staging (4096-aligned), more than staging_bytes = ", s.staging_limit,
            "; raise staging_bytes"));
    }
    if (s.reads.size() >= static_cast<size_t>(INT32_MAX)) {
        throw ArgumentError("disk stream add_read: too many reads");
    }
    s.reads.push_back({file, offset, bytes});
    return static_cast<int>(s.reads.size() - 1);
}

const void* DiskStream::acquire(int id) {
    Impl& s = *impl_;
    const uint64_t n = s.reads.size();
    if (n == 0) throw ArgumentError("disk stream acquire: no reads scheduled");
    if (id < 0 || static_cast<uint64_t>(id) >= n) {
        throw ArgumentError(cat("disk stream acquire(", id, "): no such read (", n, " reads)"));
    }
    const uint64_t held = s.acquire_seq - s.release_seq;
    const uint64_t first_held = s.release_seq % n;
    if (held >= n || (held > 0 && (static_cast<uint64_t>(id) + n - first_held) % n < held)) {
        throw ArgumentError(
            cat("disk stream acquire(", id, "): read ", id, " is already held; release it first"));
    }
    const uint64_t expected = s.acquire_seq % n;
    if (static_cast<uint64_t>(id) != expected) {
        throw ArgumentError(cat("disk stream acquire(", id, ") out of order: reads go in schedule ",
                                "order, expected ", expected));
    }
    if (!s.started) {
        s.engine->start(s.reads);
        s.started = true;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const void* data = s.engine->acquire(s.acquire_seq);
    s.stats.wait_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.acquire_seq++;
    s.stats.reads++;
    return data;
}

void DiskStream::release(int id) {
    Impl& s = *impl_;
    const uint64_t n = s.reads.size();
    if (s.acquire_seq == s.release_seq) {
        throw ArgumentError(cat("disk stream release(", id, "): no read is held"));
    }
    const uint64_t expected = s.release_seq % n;
    if (id < 0 || static_cast<uint64_t>(id) != expected) {
        throw ArgumentError(cat("disk stream release(", id, ") out of order: expected ", expected,
                                ", the oldest read held"));
    }
    s.engine->release(s.release_seq);
    s.release_seq++;
}

DiskIo DiskStream::mode() const {
    return impl_->mode;
}

uint64_t DiskStream::staging_bytes() const {
    return impl_->engine->staging_bytes();
}

const DiskStreamStats& DiskStream::stats() const {
    impl_->stats.bytes_read = impl_->engine->bytes_read();
    return impl_->stats;
}

}  // namespace strata
