// DeviceArena and ArenaBuffer (device_arena.h).
#include "kernels_cuda/device_arena.h"

#include <utility>

#include "engine/core/error.h"
#include "kernels_cuda/cuda_check.h"

namespace strata::cuda {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

DeviceArena::DeviceArena(int device, uint64_t bytes) : device_(device), blocks_(bytes) {
    if (blocks_.capacity() == 0) {
        throw BudgetError(cat("CUDA arena: a budget of ", bytes, " bytes holds nothing (at least ",
                              ArenaAllocator::kAlignment, " bytes are needed)"));
    }
    CUDA_CHECK(cudaSetDevice(device));
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, blocks_.capacity());
    if (err != cudaSuccess) {
        cudaGetLastError();  // clear the error so later calls are not blamed for it
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        throw BudgetError(cat("CUDA arena: cudaMalloc of ", blocks_.capacity() / kMiB, " MiB on device ",
                              device, " failed (", cudaGetErrorString(err), "); the device has ",
                              free_b / kMiB, " MiB free of ", total_b / kMiB,
                              " MiB: lower --gpu-mem or free the GPU"));
    }
    base_ = static_cast<uint8_t*>(p);
}

DeviceArena::~DeviceArena() {
    if (base_ != nullptr) {
        cudaSetDevice(device_);
        cudaFree(base_);  // no throw from a destructor; cudaFree waits for pending work
    }
}

void* DeviceArena::allocate(uint64_t bytes, std::string_view what) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::optional<uint64_t> offset = blocks_.allocate(bytes);
    if (!offset) {
        throw BudgetError(cat("CUDA arena: no room for ", what, " (", bytes / kMiB, " MiB): ",
                              blocks_.used() / kMiB, " MiB of ", blocks_.capacity() / kMiB,
                              " MiB in use, largest free block ", blocks_.largest_free() / kMiB,
                              " MiB; raise --gpu-mem or place less on the GPU"));
    }
    return base_ + *offset;
}

void DeviceArena::free(void* p) {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const auto* b = static_cast<const uint8_t*>(p);
    if (b < base_ || b >= base_ + blocks_.capacity() || !blocks_.free(static_cast<uint64_t>(b - base_))) {
        throw ArgumentError(cat("CUDA arena: free of a pointer it did not allocate (", p, ")"));
    }
}

bool DeviceArena::owns(const void* p, uint64_t bytes) const {
    const auto* b = static_cast<const uint8_t*>(p);
    return b >= base_ && b < base_ + blocks_.capacity() &&
           bytes <= static_cast<uint64_t>(base_ + blocks_.capacity() - b);
}

uint64_t DeviceArena::capacity() const { return blocks_.capacity(); }

uint64_t DeviceArena::used() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return blocks_.used();
}

uint64_t DeviceArena::peak() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return blocks_.peak();
}

uint64_t DeviceArena::largest_free() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return blocks_.largest_free();
}

ArenaBuffer::ArenaBuffer(std::shared_ptr<DeviceArena> arena, uint64_t bytes, std::string_view what)
    : arena_(std::move(arena)) {
    data_ = arena_->allocate(bytes, what);
    size_ = bytes;
}

ArenaBuffer& ArenaBuffer::operator=(ArenaBuffer&& other) noexcept {
    if (this != &other) {
        reset();
        arena_ = std::move(other.arena_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void ArenaBuffer::reset() {
    if (data_ != nullptr) arena_->free(data_);  // our own block: free() cannot throw here
    data_ = nullptr;
    size_ = 0;
    arena_.reset();
}

}  // namespace strata::cuda
