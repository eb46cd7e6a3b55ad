// ThreadScratch: a thread's reusable scratch memory, 64-byte aligned, uninitialised, grown on
// demand and kept for the next call (decode runs the same ops hundreds of times per token; a
// fresh buffer per call cost a third of oneDNN's matmul at m = 512). Declare one
// `thread_local ThreadScratch` per use: two uses live at once must not share one (the fused
// expert FFN holds its scratch while its fallback products take matmul's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace strata::cpu {

class ThreadScratch {
  public:
    // At least `bytes`, 64-byte aligned; valid until the next get() on this object.
    uint8_t* get(size_t bytes) {
        if (bytes + 64 > capacity_) {
            buf_.reset(new uint8_t[bytes + 64]);
            capacity_ = bytes + 64;
        }
        const auto p = reinterpret_cast<uintptr_t>(buf_.get());
        return buf_.get() + (64 - p % 64) % 64;
    }
    template <typename T>
    T* get_as(size_t elements) {
        return reinterpret_cast<T*>(get(elements * sizeof(T)));
    }

  private:
    std::unique_ptr<uint8_t[]> buf_;
    size_t capacity_ = 0;
};

}  // namespace strata::cpu
