// Pinned host staging for the CUDA backend: BulkStaging moves tensors between pageable host
// memory and the device in double-buffered chunks; ArgRing carries the small host arrays of an
// op (token ids, positions, RoPE frequencies) to device memory from the arena, without a sync.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels_cuda/device_arena.h"

namespace strata::cuda {

// Two pinned chunks that alternate, each guarded by an event (so copies on different streams
// may share them). Host memory only; the device side of a copy is the caller's.
class BulkStaging {
  public:
    explicit BulkStaging(size_t chunk_bytes);
    ~BulkStaging();
    BulkStaging(const BulkStaging&) = delete;
    BulkStaging& operator=(const BulkStaging&) = delete;

    // Enqueues host -> dev on `stream`; returns once `host` may be reused (the last chunk may
    // still be in flight from pinned memory).
    void to_device(const void* host, void* dev, size_t bytes, cudaStream_t stream);
    // dev -> host; returns when the bytes are in `host` (waits for the stream).
    void to_host(const void* dev, void* host, size_t bytes, cudaStream_t stream);

  private:
    size_t chunk_;
    uint8_t* pinned_[2] = {nullptr, nullptr};
    cudaEvent_t done_[2] = {nullptr, nullptr};
};

// A ring of two halves (pinned host + arena device) for small per-op arguments. A pushed array
// stays valid on the device for every op enqueued before the ring comes back to its half,
// which waits (on an event) until the ops that used that half have run.
class ArgRing {
  public:
    ArgRing(std::shared_ptr<DeviceArena> arena, size_t half_bytes);
    ~ArgRing();
    ArgRing(const ArgRing&) = delete;
    ArgRing& operator=(const ArgRing&) = delete;

    // Device copy of host[0, bytes), enqueued on `stream`. Arrays larger than a half go through
    // a separate buffer after a stream synchronize (rare: huge batches).
    const void* push(const void* host, size_t bytes, cudaStream_t stream);
    // Moves to the other half now (may wait) if less than `bytes` are left in this one, so the
    // next pushes need no wait (a stream being captured into a graph must not wait). Forgets
    // the recent pushes, as forget_recent().
    void reserve(size_t bytes, cudaStream_t stream);
    // No later push reuses an array pushed before this call (at a graph's start and end: a
    // copy captured into a graph runs when the graph does, not where it was enqueued).
    void forget_recent() { n_recent_ = next_recent_ = 0; }

  private:
    size_t half_;
    ArenaBuffer device_;
    ArenaBuffer large_;
    std::shared_ptr<DeviceArena> arena_;
    uint8_t* pinned_ = nullptr;
    cudaEvent_t released_[2] = {nullptr, nullptr};
    int current_ = 0;
    size_t offset_ = 0;  // inside the current half
    // The last arrays pushed into the current half, reused when a push carries the same bytes:
    // a batched pass's layers push the same positions, RoPE frequencies and cache addresses
    // (the KV stores' and the attention's) in turn, and a small copy in the stream costs the
    // GPU several microseconds of copy-engine latency.
    struct Recent {
        size_t at = 0, bytes = 0;
    };
    static constexpr int kRecent = 8;
    Recent recent_[kRecent];
    int n_recent_ = 0, next_recent_ = 0;
};

}  // namespace strata::cuda
