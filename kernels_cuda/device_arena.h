// DeviceArena: the CUDA backend's whole device memory, taken with one plain cudaMalloc of a byte
// budget (never managed memory) and handed out in blocks with byte accounting. ArenaBuffer and
// DeviceTensor own blocks of it. Free of CUDA headers so any folder may include it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "engine/core/tensor.h"
#include "kernels_cuda/arena_allocator.h"

namespace strata::cuda {

// Thread-safe. Blocks are 256-byte aligned. Freeing a block does not wait for queued GPU work:
// the backend runs everything on one stream, so a later user of the same bytes (an upload or a
// kernel on that stream) is ordered after every earlier user.
class DeviceArena {
  public:
    // Takes `bytes` on `device`; BudgetError (with the device's free memory) if it cannot.
    DeviceArena(int device, uint64_t bytes);
    ~DeviceArena();
    DeviceArena(const DeviceArena&) = delete;
    DeviceArena& operator=(const DeviceArena&) = delete;

    // A block of at least `bytes`; BudgetError naming `what`, the request and the arena's state
    // when it does not fit.
    void* allocate(uint64_t bytes, std::string_view what);
    // Returns a block from allocate (nullptr is a no-op); ArgumentError for a foreign pointer.
    void free(void* p);

    // p (and the `bytes` after it) lie inside the arena's memory.
    bool owns(const void* p, uint64_t bytes = 1) const;

    int device() const { return device_; }
    uint64_t capacity() const;
    uint64_t used() const;
    uint64_t peak() const;
    uint64_t largest_free() const;

  private:
    int device_;
    uint8_t* base_ = nullptr;
    mutable std::mutex mutex_;
    ArenaAllocator blocks_;
};

// One block of an arena, returned when destroyed (move-only). It shares ownership of the arena,
// so the memory outlives the backend if a buffer does.
class ArenaBuffer {
  public:
    ArenaBuffer() = default;
    ArenaBuffer(std::shared_ptr<DeviceArena> arena, uint64_t bytes, std::string_view what);
    ~ArenaBuffer() { reset(); }
    ArenaBuffer(ArenaBuffer&& other) noexcept { *this = std::move(other); }
    ArenaBuffer& operator=(ArenaBuffer&& other) noexcept;
    ArenaBuffer(const ArenaBuffer&) = delete;
    ArenaBuffer& operator=(const ArenaBuffer&) = delete;

    void* data() const { return data_; }
    uint64_t size() const { return size_; }
    explicit operator bool() const { return data_ != nullptr; }
    void reset();

  private:
    std::shared_ptr<DeviceArena> arena_;
    void* data_ = nullptr;
    uint64_t size_ = 0;
};

// A tensor in device memory together with the arena block that holds it.
struct DeviceTensor {
    ArenaBuffer buffer;
    Tensor tensor;  // contiguous view of buffer, memory = Device
};

}  // namespace strata::cuda
