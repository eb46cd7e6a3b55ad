// BulkStaging and ArgRing (staging.h).
#include "kernels_cuda/staging.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels_cuda/cuda_check.h"

namespace strata::cuda {
namespace {

// memcpy by several threads: one thread copying pageable memory into a pinned chunk reaches
// ~6 GB/s, a tenth of what PCIe moves from pinned memory (H100 machine, 70B prefill at 6 GiB:
// shipped weights arrived at 5.8 GB/s). At most 8 threads (memory bandwidth is saturated well
// before 16), each with one slice of at least 64 KiB, so an expert's matrix of about 1 MiB is
// split too (a MoE prompt pass on the H200 host shipped its experts at 6.9 GB/s with 1 MiB
// slices, 8.5-9.9 GB/s with these: at that size the per-copy costs dominate).
void parallel_copy(uint8_t* dst, const uint8_t* src, size_t n) {
    constexpr size_t kMinSlice = size_t{64} << 10;
    const int threads = static_cast<int>(std::min<int64_t>({static_cast<int64_t>(n / kMinSlice), 8, omp_get_max_threads()}));
    if (threads < 2 || omp_in_parallel()) {
        std::memcpy(dst, src, n);
        return;
    }
    const size_t slice = (n / static_cast<size_t>(threads) + 63) / 64 * 64;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
        const size_t at = static_cast<size_t>(t) * slice;
        if (at < n) std::memcpy(dst + at, src + at, std::min(slice, n - at));
    }
}

}  // namespace

BulkStaging::BulkStaging(size_t chunk_bytes) : chunk_(chunk_bytes) {
    for (int i = 0; i < 2; ++i) {
        CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pinned_[i]), chunk_));
        CUDA_CHECK(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming));
    }
}

BulkStaging::~BulkStaging() {
    for (int i = 0; i < 2; ++i) {
        if (done_[i] != nullptr) {
            cudaEventSynchronize(done_[i]);
            cudaEventDestroy(done_[i]);
        }
        if (pinned_[i] != nullptr) cudaFreeHost(pinned_[i]);
    }
}

void BulkStaging::to_device(const void* host, void* dev, size_t bytes, cudaStream_t stream) {
    const auto* src = static_cast<const uint8_t*>(host);
    auto* dst = static_cast<uint8_t*>(dev);
    for (size_t done = 0, i = 0; done < bytes; done += chunk_, i ^= 1) {
        const size_t n = std::min(chunk_, bytes - done);
        CUDA_CHECK(cudaEventSynchronize(done_[i]));  // the copy that last read this chunk is over
        parallel_copy(pinned_[i], src + done, n);
        CUDA_CHECK(cudaMemcpyAsync(dst + done, pinned_[i], n, cudaMemcpyHostToDevice, stream));
        CUDA_CHECK(cudaEventRecord(done_[i], stream));
    }
}

void BulkStaging::to_host(const void* dev, void* host, size_t bytes, cudaStream_t stream) {
    const auto* src = static_cast<const uint8_t*>(dev);
    auto* dst = static_cast<uint8_t*>(host);
    // The chunk's last host -> device copy may be on another stream (a weight shipped on the
    // copy stream, CudaBackend::ship_in): it must have read the chunk before this overwrites it.
    CUDA_CHECK(cudaStreamWaitEvent(stream, done_[0], 0));
    for (size_t done = 0; done < bytes; done += chunk_) {
        const size_t n = std::min(chunk_, bytes - done);
        CUDA_CHECK(cudaMemcpyAsync(pinned_[0], src + done, n, cudaMemcpyDeviceToHost, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        parallel_copy(dst + done, pinned_[0], n);
    }
}

ArgRing::ArgRing(std::shared_ptr<DeviceArena> arena, size_t half_bytes)
    : half_(half_bytes), device_(arena, 2 * half_bytes, "op argument ring"), arena_(std::move(arena)) {
    CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&pinned_), 2 * half_));
    for (auto& e : released_) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
}

ArgRing::~ArgRing() {
    for (auto& e : released_) {
        if (e != nullptr) {
            cudaEventSynchronize(e);
            cudaEventDestroy(e);
        }
    }
    if (pinned_ != nullptr) cudaFreeHost(pinned_);
}

void ArgRing::reserve(size_t bytes, cudaStream_t stream) {
    forget_recent();
    if (offset_ + bytes <= half_) return;
    CUDA_CHECK(cudaEventRecord(released_[current_], stream));
    current_ ^= 1;
    CUDA_CHECK(cudaEventSynchronize(released_[current_]));
    offset_ = 0;
}

const void* ArgRing::push(const void* host, size_t bytes, cudaStream_t stream) {
    constexpr size_t kAlign = 256;
    const size_t size = (bytes + kAlign - 1) / kAlign * kAlign;
    if (size > half_) {
        CUDA_CHECK(cudaStreamSynchronize(stream));  // earlier ops may still read large_
        if (large_.size() < bytes) {
            large_.reset();
            large_ = ArenaBuffer(arena_, bytes, "large op argument");
        }
        CUDA_CHECK(cudaMemcpy(large_.data(), host, bytes, cudaMemcpyHostToDevice));
        return large_.data();
    }
    // An array pushed lately into the current half with the same bytes: its device copy is
    // still there and queued before anything enqueued now, so no second copy is.
    for (int i = 0; i < n_recent_; ++i) {
        const Recent& r = recent_[i];
        if (r.bytes == bytes && std::memcmp(pinned_ + r.at, host, bytes) == 0) {
            return static_cast<uint8_t*>(device_.data()) + r.at;
        }
    }
    if (offset_ + size > half_) {
        // Leave this half (its users are everything enqueued so far) and take the other one
        // once the ops that used it last time have run.
        CUDA_CHECK(cudaEventRecord(released_[current_], stream));
        current_ ^= 1;
        CUDA_CHECK(cudaEventSynchronize(released_[current_]));
        offset_ = 0;
        forget_recent();
    }
    const size_t at = static_cast<size_t>(current_) * half_ + offset_;
    std::memcpy(pinned_ + at, host, bytes);
    auto* dev = static_cast<uint8_t*>(device_.data()) + at;
    CUDA_CHECK(cudaMemcpyAsync(dev, pinned_ + at, bytes, cudaMemcpyHostToDevice, stream));
    offset_ += size;
    recent_[next_recent_] = Recent{at, bytes};
    next_recent_ = (next_recent_ + 1) % kRecent;
    if (n_recent_ < kRecent) ++n_recent_;
    return dev;
}

}  // namespace strata::cuda
