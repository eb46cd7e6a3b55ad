// Activation sparsity (CATS) on the device, mask-based so that a CUDA graph captures it (no
// host round trip, fixed launch shapes): the mask kernel thresholds act(gate) into a bit mask
// and counts the active neurons; the up rows of active neurons run through the masked GEMV
// (gemv.cu); the down kernel sums h_i·down_t_i over the active rows of the neuron-major copy
// into one partial row per chunk of neurons, and the combine kernel adds the partials in chunk
// order (no float atomics: the result does not depend on scheduling).
#include "engine/core/sparse_scratch.h"
#include "kernels_cuda/activation.cuh"
#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kMaskThreads = 256;
constexpr int kDownWarps = kSparseDownChunk / 32;  // a warp per mask word of the chunk
constexpr int kSliceItems = 32;                    // 32-element items per slice (a lane each)
constexpr int kCombineThreads = 256;
constexpr int kThresholdThreads = 256;

// Adds the block's count to *counter: one atomic per block. Every thread must call it.
__device__ void block_count(int n, unsigned long long* counter) {
    __shared__ int partial[32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) n += __shfl_xor_sync(kFullMask, n, o);
    __syncthreads();
    if (lane == 0) partial[warp] = n;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long sum = 0;
        for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) sum += static_cast<unsigned long long>(partial[w]);
        if (sum > 0) atomicAdd(counter, sum);
    }
}

__global__ void __launch_bounds__(kMaskThreads)
    sparse_mask_kernel(const float* __restrict__ gate, float* h, uint32_t* mask, int64_t n_ff, Activation act,
                       float threshold, unsigned long long* counts) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * kMaskThreads + threadIdx.x;
    float a = 0.0f;
    bool on = false;
    if (i < n_ff) {
        a = gate_activation(act, gate[i]);
        on = fabsf(a) > threshold;
        h[i] = on ? a : 0.0f;
    }
    const unsigned bits = __ballot_sync(kFullMask, on);
    if (threadIdx.x % 32 == 0 && i < n_ff) mask[i / 32] = bits;  // a word's neurons past n_ff stay 0
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(counts, static_cast<unsigned long long>(n_ff));
    block_count(on ? 1 : 0, counts + 1);
}

// Block (chunk, slice): neurons [chunk·256, +256), items [slice·32, +32) of the rows. Warp w
// takes the active neurons of mask word chunk·8 + w, two rows at a time; lane l accumulates item
// slice·32 + l. The warps' sums meet in shared memory (fixed order) and leave as one partial row.
template <class C>
__global__ void __launch_bounds__(kDownWarps * 32)
    sparse_down_kernel(const uint8_t* __restrict__ w, uint64_t nb1, int64_t n_embd, int64_t n_ff,
                       const float* __restrict__ h, const uint32_t* __restrict__ mask, float* partial) {
    __shared__ float sums[kDownWarps][32][33];  // + 1: lanes write rows of 32 without bank conflicts
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t n_items = n_embd / 32;
    const int64_t item = static_cast<int64_t>(blockIdx.y) * kSliceItems + lane;
    const bool has = item < n_items;
    float acc[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) acc[j] = 0.0f;
    const int64_t word = static_cast<int64_t>(blockIdx.x) * kDownWarps + warp;
    uint32_t bits = word * 32 < n_ff ? __ldg(mask + word) : 0u;
    while (bits != 0) {
        const int64_t i0 = word * 32 + __ffs(bits) - 1;
        bits &= bits - 1;
        const int64_t i1 = bits != 0 ? word * 32 + __ffs(bits) - 1 : -1;
        if (bits != 0) bits &= bits - 1;
        if (!has) continue;
        float v0[32], v1[32];
        int sub = 0;
        C::dequant(item_block<C>(w + static_cast<uint64_t>(i0) * nb1, item, sub), sub, v0, 32);
        const float h0 = __ldg(h + i0);
        float h1 = 0.0f;
        if (i1 >= 0) {
            C::dequant(item_block<C>(w + static_cast<uint64_t>(i1) * nb1, item, sub), sub, v1, 32);
            h1 = __ldg(h + i1);
        }
#pragma unroll
        for (int j = 0; j < 32; ++j) acc[j] += h0 * v0[j];
        if (i1 >= 0) {
#pragma unroll
            for (int j = 0; j < 32; ++j) acc[j] += h1 * v1[j];
        }
    }
#pragma unroll
    for (int j = 0; j < 32; ++j) sums[warp][lane][j] = acc[j];
    __syncthreads();
    // Thread t sums element t (and t + 256, ...) of the slice over the warps, in warp order.
    const int64_t base = static_cast<int64_t>(blockIdx.y) * kSliceItems * 32;
    float* out = partial + static_cast<int64_t>(blockIdx.x) * n_embd;
    for (int e = threadIdx.x; e < kSliceItems * 32; e += blockDim.x) {
        if (base + e >= n_embd) break;
        float s = 0.0f;
        for (int wi = 0; wi < kDownWarps; ++wi) s += sums[wi][e / 32][e % 32];
        out[base + e] = s;
    }
}

__global__ void __launch_bounds__(kCombineThreads)
    sparse_combine_kernel(const float* __restrict__ partial, int64_t n_chunks, int64_t n_embd, float* y) {
    const int64_t e = static_cast<int64_t>(blockIdx.x) * kCombineThreads + threadIdx.x;
    if (e >= n_embd) return;
    float s = 0.0f;
    for (int64_t c = 0; c < n_chunks; ++c) s += partial[c * n_embd + e];
    y[e] = s;
}

// y = act(gate)·up where |act(gate)| > threshold, else 0; counts as the mask kernel.
__global__ void __launch_bounds__(kThresholdThreads)
    thresholded_kernel(F32View gate, F32View up, F32View y, Activation act, float threshold,
                       unsigned long long* counts) {
    const int64_t total = gate.ne0 * gate.n_rows;
    int kept = 0;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThresholdThreads + threadIdx.x; i < total;
         i += static_cast<int64_t>(gridDim.x) * kThresholdThreads) {
        const int64_t r = i / gate.ne0, e = i % gate.ne0;
        const float a = gate_activation(act, gate.row(r)[e]);
        const bool on = fabsf(a) > threshold;
        y.row(r)[e] = on ? a * up.row(r)[e] : 0.0f;
        kept += on;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(counts, static_cast<unsigned long long>(total));
    block_count(kept, counts + 1);
}

}  // namespace

void sparse_mask(const SparseMaskLaunch& a, cudaStream_t stream) {
    if (a.n_ff == 0) return;
    sparse_mask_kernel<<<blocks_for(a.n_ff, kMaskThreads), kMaskThreads, 0, stream>>>(
        a.gate, a.h, a.mask, a.n_ff, a.act, a.threshold, reinterpret_cast<unsigned long long*>(a.counts));
    CUDA_CHECK_LAUNCH("sparse_mask_kernel");
}

bool sparse_down_supported(GgmlType type) { return codec_supported(type); }

void sparse_down(const SparseDownLaunch& a, cudaStream_t stream) {
    if (a.n_embd == 0) return;
    const int64_t n_chunks = (a.n_ff + kSparseDownChunk - 1) / kSparseDownChunk;
    if (n_chunks == 0) {
        CUDA_CHECK(cudaMemsetAsync(a.y, 0, sizeof(float) * static_cast<size_t>(a.n_embd), stream));
        return;
    }
    const dim3 grid(static_cast<unsigned>(n_chunks), blocks_for(a.n_embd / 32, kSliceItems));
    dispatch_codec(a.type, "sparse_gated_ffn", [&](auto codec) {
        using C = decltype(codec);
        sparse_down_kernel<C><<<grid, kDownWarps * 32, 0, stream>>>(a.down_t, a.nb1, a.n_embd, a.n_ff, a.h, a.mask,
                                                                    a.partial);
        CUDA_CHECK_LAUNCH("sparse_down_kernel");
    });
    sparse_combine_kernel<<<blocks_for(a.n_embd, kCombineThreads), kCombineThreads, 0, stream>>>(
        a.partial, n_chunks, a.n_embd, a.y);
    CUDA_CHECK_LAUNCH("sparse_combine_kernel");
}

void thresholded_gated_activation(F32View gate, F32View up, Activation act, float threshold, F32View y,
                                  uint64_t* counts, cudaStream_t stream) {
    const int64_t total = gate.ne0 * gate.n_rows;
    if (total == 0) return;
    thresholded_kernel<<<capped_blocks(total, kThresholdThreads), kThresholdThreads, 0, stream>>>(
        gate, up, y, act, threshold, reinterpret_cast<unsigned long long*>(counts));
    CUDA_CHECK_LAUNCH("thresholded_kernel");
}

}  // namespace strata::cuda
