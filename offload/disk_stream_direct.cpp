// Direct mode: O_DIRECT reads through io_uring into a ring of aligned staging memory, so the
// streamed weights never enter the page cache and the disk always has queue_depth requests.
// Each read takes one contiguous 4096-aligned span of the ring; reads are issued in schedule
// order while the next one's span fits, and their space comes back in release order.
#include "engine/core/error.h"
#include "offload/disk_stream_engine.h"

#include <liburing.h>

#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace strata {
namespace {

struct AlignedFree {
    void operator()(void* p) const { std::free(p); }
};

// One scheduled read's copy in the ring, in issue order.
struct Slot {
    uint64_t seq = 0;
    DiskRead read;
    uint64_t ring_at = 0;     // where the aligned span starts in the staging memory
    uint64_t ring_bytes = 0;  // span plus any tail of the ring skipped to keep it contiguous
    uint64_t span = 0;        // aligned bytes to read
    uint64_t submitted = 0;   // bytes of the span handed to requests so far
    int pending = 0;          // requests in flight
    std::string error;        // first failure, thrown at acquire
};

// One io_uring request: a block of a slot (re-issued in place after a short read).
struct Request {
    uint64_t seq = 0;
    uint64_t file_offset = 0;
    uint8_t* dest = nullptr;
    uint32_t bytes = 0;
};

class DirectEngine final : public DiskStreamEngine {
  public:
    DirectEngine(const std::vector<std::string>& paths, const DiskStreamOptions& options)
        : paths_(paths),
          queue_depth_(options.queue_depth),
          block_bytes_(options.block_bytes),
          capacity_(align_up(options.staging_bytes)) {
        for (const std::string& path : paths) {
            fds_.push_back(open_file(path, O_RDONLY | O_DIRECT));
            sizes_.push_back(file_size_of(fds_.back().get(), path));
        }
        staging_.reset(static_cast<uint8_t*>(std::aligned_alloc(kDiskAlign, capacity_)));
        if (!staging_) {
            throw SystemError(cat("cannot allocate ", capacity_, " bytes of disk staging memory"));
        }
        // Touch every page now, so the memory is resident and counted from the start.
        std::memset(staging_.get(), 0, capacity_);
        const int err = io_uring_queue_init(static_cast<unsigned>(queue_depth_), &ring_, 0);
        if (err < 0) {
            throw SystemError(
                cat("io_uring_queue_init(", queue_depth_, ") failed: ", std::strerror(-err)));
        }
        requests_.resize(queue_depth_);
        for (int i = queue_depth_ - 1; i >= 0; --i)
            free_requests_.push_back(i);
    }

    ~DirectEngine() override {
        // The kernel writes into staging_ until each request completes: wait for them all.
        io_uring_submit(&ring_);
        while (in_flight_ > 0) {
            io_uring_cqe* cqe = nullptr;
            const int err = io_uring_wait_cqe(&ring_, &cqe);
            if (err == -EINTR || err == -EAGAIN) continue;
            if (err < 0) break;  // the ring is broken: no completion will come
            io_uring_cqe_seen(&ring_, cqe);
            in_flight_--;
        }
        io_uring_queue_exit(&ring_);
    }

    uint64_t file_size(int file) const override { return sizes_[file]; }
    uint64_t staging_bytes() const override { return capacity_; }
    uint64_t bytes_read() const override { return bytes_read_; }

    void start(std::vector<DiskRead> reads) override {
        reads_ = std::move(reads);
        fill();
    }

    const void* acquire(uint64_t seq) override {
        for (;;) {
            fill();
            if (seq < issue_seq_) {
                Slot& slot = slot_of(seq);
                if (!slot.error.empty()) throw SystemError(slot.error);
                if (slot.submitted == slot.span && slot.pending == 0) {
                    return staging_.get() + slot.ring_at +
                           (slot.read.offset - align_down(slot.read.offset));
                }
            }
            if (in_flight_ == 0) {
                throw ArgumentError(cat("disk stream: read ", seq % reads_.size(),
                                        " does not fit beside the reads still held (", used_,
                                        " of ", capacity_,
                                        " staging bytes); release earlier reads first"));
            }
            wait_and_complete();
        }
    }

    void release(uint64_t seq) override {
        STRATA_INVARIANT(!slots_.empty() && slots_.front().seq == seq);
        const Slot& slot = slots_.front();
        tail_ = slot.ring_at + slot.span;
        if (tail_ == capacity_) tail_ = 0;
        used_ -= slot.ring_bytes;
        if (used_ == 0) head_ = tail_ = 0;
        slots_.pop_front();
        fill();
    }

  private:
    Slot& slot_of(uint64_t seq) { return slots_[seq - slots_.front().seq]; }

    // Places `span` bytes contiguously after the newest slot; false when the ring lacks room.
    bool allocate(uint64_t span, uint64_t& at, uint64_t& ring_bytes) {
        if (used_ == 0) head_ = tail_ = 0;
        if (used_ == capacity_) return false;
        if (head_ >= tail_) {  // free space: [head_, capacity_) and [0, tail_)
            if (capacity_ - head_ >= span) {
                at = head_;
                ring_bytes = span;
            } else if (tail_ >= span) {
                at = 0;
                ring_bytes = capacity_ - head_ + span;
            } else {
                return false;
            }
        } else {  // free space: [head_, tail_)
            if (tail_ - head_ < span) return false;
            at = head_;
            ring_bytes = span;
        }
        head_ = at + span == capacity_ ? 0 : at + span;
        used_ += ring_bytes;
        STRATA_INVARIANT(used_ <= capacity_);
        return true;
    }

    // Hands requests to the kernel while there are free requests and staging room.
    void fill() {
        if (reads_.empty()) return;
        bool queued = false;
        while (!free_requests_.empty()) {
            Slot* slot = slots_.empty() ? nullptr : &slots_.back();
            if (slot == nullptr || slot->submitted == slot->span) {
                const DiskRead& read = reads_[issue_seq_ % reads_.size()];
                const uint64_t begin = align_down(read.offset);
                const uint64_t span = align_up(read.offset + read.bytes) - begin;
                Slot next;
                if (!allocate(span, next.ring_at, next.ring_bytes)) break;
                next.seq = issue_seq_++;
                next.read = read;
                next.span = span;
                slots_.push_back(std::move(next));
                slot = &slots_.back();
            }
            const uint64_t bytes = std::min(block_bytes_, slot->span - slot->submitted);
            const int index = free_requests_.back();
            free_requests_.pop_back();
            Request& request = requests_[index];
            request.seq = slot->seq;
            request.file_offset = align_down(slot->read.offset) + slot->submitted;
            request.dest = staging_.get() + slot->ring_at + slot->submitted;
            request.bytes = static_cast<uint32_t>(bytes);
            slot->submitted += bytes;
            slot->pending++;
            queue(index);
            queued = true;
        }
        if (queued) submit();
    }

    void queue(int index) {
        const Request& request = requests_[index];
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (sqe == nullptr) {  // the submission queue is full of prepared requests
            submit();
            sqe = io_uring_get_sqe(&ring_);
            STRATA_INVARIANT(sqe != nullptr);
        }
        const int fd = fds_[slot_of(request.seq).read.file].get();
        io_uring_prep_read(sqe, fd, request.dest, request.bytes, request.file_offset);
        io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(index));
        in_flight_++;
    }

    void submit() {
        for (;;) {
            const int err = io_uring_submit(&ring_);
            if (err >= 0) return;
            if (err != -EINTR && err != -EAGAIN && err != -EBUSY) {
                throw SystemError(cat("io_uring_submit failed: ", std::strerror(-err)));
            }
        }
    }

    void wait_and_complete() {
        io_uring_cqe* cqe = nullptr;
        int err;
        do {
            err = io_uring_wait_cqe(&ring_, &cqe);
        } while (err == -EINTR || err == -EAGAIN);
        if (err < 0) throw SystemError(cat("io_uring_wait_cqe failed: ", std::strerror(-err)));
        bool requeued = false;
        do {
            const int index = static_cast<int>(io_uring_cqe_get_data64(cqe));
            const int res = cqe->res;
            io_uring_cqe_seen(&ring_, cqe);
            in_flight_--;
            requeued |= complete(index, res);
        } while (io_uring_peek_cqe(&ring_, &cqe) == 0);
        if (requeued) submit();
    }

    // Returns whether the request went back to the kernel for its remainder.
    bool complete(int index, int res) {
        Request& request = requests_[index];
        Slot& slot = slot_of(request.seq);
        const std::string& path = paths_[slot.read.file];
        const uint64_t size = sizes_[slot.read.file];
        if (res == -EINTR || res == -EAGAIN) {
            queue(index);
            return true;
        }
        if (res < 0) {
            fail(slot, cat("cannot read ", request.bytes, " bytes at offset ", request.file_offset,
                           " of '", path, "': ", std::strerror(-res)));
        } else {
            bytes_read_ += static_cast<uint64_t>(res);
            const uint64_t end = request.file_offset + static_cast<uint64_t>(res);
            // A block running past the end of the file comes back short; that is the aligned
            // span's tail, never the requested bytes (add_read checked those lie in the file).
            if (static_cast<uint32_t>(res) < request.bytes && end < size) {
                if (res == 0) {
                    fail(slot, cat("unexpected end of '", path, "' at offset ", request.file_offset,
                                   " (", size, " bytes when opened): was the file truncated?"));
                } else {
                    // O_DIRECT needs an aligned offset: read again from the last whole block.
                    const uint64_t done = align_down(static_cast<uint64_t>(res));
                    request.file_offset += done;
                    request.dest += done;
                    request.bytes -= static_cast<uint32_t>(done);
                    queue(index);
                    return true;
                }
            }
        }
        slot.pending--;
        free_requests_.push_back(index);
        return false;
    }

    static void fail(Slot& slot, std::string message) {
        if (slot.error.empty()) slot.error = std::move(message);
    }

    std::vector<std::string> paths_;
    std::vector<UniqueFd> fds_;
    std::vector<uint64_t> sizes_;
    const int queue_depth_;
    const uint64_t block_bytes_;
    const uint64_t capacity_;
    std::unique_ptr<uint8_t, AlignedFree> staging_;
    io_uring ring_{};

    std::vector<DiskRead> reads_;
    std::deque<Slot> slots_;  // issued, not yet released; front is the oldest
    uint64_t issue_seq_ = 0;  // next seq to give a slot
    uint64_t head_ = 0;       // ring: next free byte after the newest slot
    uint64_t tail_ = 0;       // ring: first byte of the oldest slot
    uint64_t used_ = 0;       // ring bytes held by slots, skipped tails included
    std::vector<Request> requests_;
    std::vector<int> free_requests_;
    int in_flight_ = 0;
    uint64_t bytes_read_ = 0;
};

}  // namespace

bool io_uring_available() {
    io_uring ring{};
    if (io_uring_queue_init(1, &ring, 0) < 0) return false;
    io_uring_queue_exit(&ring);
    return true;
}

std::unique_ptr<DiskStreamEngine> make_direct_engine(const std::vector<std::string>& paths,
                                                     const DiskStreamOptions& options) {
    return std::make_unique<DirectEngine>(paths, options);
}

}  // namespace strata
