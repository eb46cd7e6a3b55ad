// Buffer: one owning allocation made by a backend (host memory, device memory, a fake device's
// pool), released through the backend's deleter when the Buffer is destroyed. Move-only.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>

#include "engine/core/tensor.h"

namespace strata {

class Buffer {
  public:
    using Release = std::function<void(void*, uint64_t)>;

    Buffer() = default;
    Buffer(void* data, uint64_t size, MemoryKind memory, Release release)
        : data_(data), size_(size), memory_(memory), release_(std::move(release)) {}
    ~Buffer() { reset(); }
    Buffer(Buffer&& other) noexcept { *this = std::move(other); }
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    void* data() const { return data_; }
    uint64_t size() const { return size_; }
    MemoryKind memory() const { return memory_; }
    explicit operator bool() const { return data_ != nullptr; }
    void reset();

    // A contiguous view of the first bytes as `type` [ne...]; ArgumentError if it does not fit.
    Tensor tensor(GgmlType type, std::initializer_list<int64_t> ne) const;

  private:
    void* data_ = nullptr;
    uint64_t size_ = 0;
    MemoryKind memory_ = MemoryKind::Host;
    Release release_;
};

}  // namespace strata
