// Best-fit allocator over offsets (arena_allocator.h).
#include "kernels_cuda/arena_allocator.h"

#include <iterator>

namespace strata::cuda {

ArenaAllocator::ArenaAllocator(uint64_t capacity) : capacity_(capacity / kAlignment * kAlignment) {
    if (capacity_ > 0) free_.emplace(0, capacity_);
}

std::optional<uint64_t> ArenaAllocator::allocate(uint64_t bytes) {
    if (bytes > capacity_) return std::nullopt;
    const uint64_t size = bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
    }
    if (best == free_.end()) return std::nullopt;
    const uint64_t offset = best->first;
    const uint64_t rest = best->second - size;
    free_.erase(best);
    if (rest > 0) free_.emplace(offset + size, rest);
    live_.emplace(offset, size);
    used_ += size;
    if (used_ > peak_) peak_ = used_;
    return offset;
}

bool ArenaAllocator::free(uint64_t offset) {
    const auto live = live_.find(offset);
    if (live == live_.end()) return false;
    uint64_t start = offset;
    uint64_t size = live->second;
    used_ -= size;
    live_.erase(live);
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && next->first == start + size) {  // merge with the block after
        size += next->second;
        next = free_.erase(next);
    }
    if (next != free_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == start) {  // merge with the block before
            start = prev->first;
            size += prev->second;
            free_.erase(prev);
        }
    }
    free_.emplace(start, size);
    return true;
}

uint64_t ArenaAllocator::largest_free() const {
    uint64_t largest = 0;
    for (const auto& [offset, size] : free_) largest = size > largest ? size : largest;
    return largest;
}

uint64_t ArenaAllocator::block_size(uint64_t offset) const {
    const auto it = live_.find(offset);
    return it == live_.end() ? 0 : it->second;
}

}  // namespace strata::cuda
