// ArenaAllocator: best-fit placement of blocks inside one fixed range of bytes, with coalescing
// frees and byte accounting. Pure bookkeeping over offsets (no device memory), so it is tested
// without a GPU; DeviceArena (device_arena.h) puts it over one cudaMalloc. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

namespace strata::cuda {

class ArenaAllocator {
  public:
    static constexpr uint64_t kAlignment = 256;  // cudaMalloc's alignment, enough for any kernel

    explicit ArenaAllocator(uint64_t capacity);

    // Offset of a free block of at least `bytes` (rounded up to kAlignment; 0 bytes takes one
    // unit so every allocation has a distinct offset), or nullopt when no free block is large
    // enough. Best fit: the smallest free block that holds it.
    std::optional<uint64_t> allocate(uint64_t bytes);

    // Returns the block at `offset` (from allocate) to the free list, merged with free
    // neighbours. Returns false for an offset that is not allocated.
    bool free(uint64_t offset);

    uint64_t capacity() const { return capacity_; }
    uint64_t used() const { return used_; }   // bytes in live blocks (rounded sizes)
    uint64_t peak() const { return peak_; }   // most bytes ever live at once
    uint64_t largest_free() const;
    size_t n_live() const { return live_.size(); }
    // Size of the live block at offset, 0 if none.
    uint64_t block_size(uint64_t offset) const;

  private:
    uint64_t capacity_;
    uint64_t used_ = 0;
    uint64_t peak_ = 0;
    std::map<uint64_t, uint64_t> free_;            // offset -> size, disjoint, never adjacent
    std::unordered_map<uint64_t, uint64_t> live_;  // offset -> size
};

}  // namespace strata::cuda
