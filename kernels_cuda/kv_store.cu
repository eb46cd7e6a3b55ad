// kv_store on the device: f32 K/V rows of new tokens into cache cells (position p in cell
// p % cells: a ring for sliding-window layers) as F32, F16, BF16, Q8_0, Q4_0 or Q5_0, bit-identical to quant/'s reference quantizers (one warp per 32-element block).
#include <cuda_fp16.h>

#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint16_t f16_bits(float f) { return __half_as_ushort(__float2half_rn(f)); }

// ggml's reference bf16 rounding: NaN quietened, else round to nearest even.
__device__ __forceinline__ uint16_t bf16_bits(float f) {
    const uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// 1/d, or 0 where that is not finite (quant/'s inverse_or_zero).
__device__ __forceinline__ float inverse_or_zero(float d) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    return isfinite(id) ? id : 0.0f;
}

// The row of the cache that position `pos` goes to.
__device__ __forceinline__ uint8_t* ring_row(const KvStoreLaunch& c, int64_t pos) {
    return c.cache + static_cast<uint64_t>(pos % c.cells) * c.nb1;
}

__device__ __forceinline__ int clamp_to_int(float v, int lo, int hi) {
    return static_cast<int>(fminf(fmaxf(v, static_cast<float>(lo)), static_cast<float>(hi)));
}

template <GgmlType kType>
__global__ void kv_store_plain_kernel(F32View src, KvStoreLaunch cache, int64_t first,
                                      const int32_t* first_dev) {
    if (first_dev != nullptr) first = *first_dev;
    const int64_t total = src.n_rows * src.ne0;
    for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
         t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t r = t / src.ne0, e = t % src.ne0;
        const float v = src.row(r)[e];
        uint8_t* row = ring_row(cache, first + r);
        if constexpr (kType == GgmlType::F32) reinterpret_cast<float*>(row)[e] = v;
        if constexpr (kType == GgmlType::F16) reinterpret_cast<uint16_t*>(row)[e] = f16_bits(v);
        if constexpr (kType == GgmlType::BF16) reinterpret_cast<uint16_t*>(row)[e] = bf16_bits(v);
    }
}

// One warp per 32-element block; lane j holds element j.
template <GgmlType kType>
__global__ void kv_store_block_kernel(F32View src, KvStoreLaunch cache, int64_t first,
                                      const int32_t* first_dev) {
    if (first_dev != nullptr) first = *first_dev;
    constexpr int kBytes = kType == GgmlType::Q8_0 ? 34 : (kType == GgmlType::Q4_0 ? 18 : 22);
    const int lane = threadIdx.x % 32;
    const int64_t per_row = src.ne0 / 32;
    const int64_t total = src.n_rows * per_row;
    const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
    for (int64_t w = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32; w < total;
         w += warps) {
        const int64_t r = w / per_row, blk = w % per_row;
        const float x = src.row(r)[blk * 32 + lane];
        uint8_t* b = ring_row(cache, first + r) + blk * kBytes;
        if constexpr (kType == GgmlType::Q8_0) {
            const float d = warp_max(fabsf(x)) / 127.0f;
            const float id = inverse_or_zero(d);
            b[2 + lane] = static_cast<uint8_t>(static_cast<int8_t>(clamp_to_int(roundf(mul_rn(x, id)), -127, 127)));
            if (lane == 0) *reinterpret_cast<uint16_t*>(b) = f16_bits(d);
        } else {
            // Signed value of largest magnitude, the first one on a tie (NaN never wins).
            float best = isnan(x) ? -1.0f : fabsf(x);
            int idx = lane;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                const float ob = __shfl_xor_sync(kFullMask, best, o);
                const int oi = __shfl_xor_sync(kFullMask, idx, o);
                if (ob > best || (ob == best && oi < idx)) {
                    best = ob;
                    idx = oi;
                }
            }
            const float winner = __shfl_sync(kFullMask, x, idx);
            const float max = best > 0.0f ? winner : 0.0f;
            constexpr int kLevels = kType == GgmlType::Q4_0 ? 16 : 32;
            constexpr float kHalf = static_cast<float>(kLevels / 2);
            const float d = max / -kHalf;
            const float id = inverse_or_zero(d);
            const int q = clamp_to_int(add_rn(mul_rn(x, id), kHalf + 0.5f), 0, kLevels - 1);
            const int q_hi = __shfl_down_sync(kFullMask, q, 16);  // element lane + 16
            const int qs = kType == GgmlType::Q4_0 ? 2 : 6;
            if (lane < 16) b[qs + lane] = static_cast<uint8_t>((q & 0xF) | ((q_hi & 0xF) << 4));
            if constexpr (kType == GgmlType::Q5_0) {
                const uint32_t qh = __ballot_sync(kFullMask, (q >> 4) & 1);
                if (lane < 4) b[2 + lane] = static_cast<uint8_t>(qh >> (8 * lane));
            }
            if (lane == 0) *reinterpret_cast<uint16_t*>(b) = f16_bits(d);
        }
    }
}

template <GgmlType kType>
void launch_plain(F32View src, const KvStoreLaunch& cache, int64_t first, const int32_t* first_dev,
                  cudaStream_t stream) {
    kv_store_plain_kernel<kType><<<capped_blocks(src.n_rows * src.ne0, kThreads), kThreads, 0, stream>>>(
        src, cache, first, first_dev);
    CUDA_CHECK_LAUNCH("kv_store_plain_kernel");
}

template <GgmlType kType>
void launch_block(F32View src, const KvStoreLaunch& cache, int64_t first, const int32_t* first_dev,
                  cudaStream_t stream) {
    const int64_t warps = src.n_rows * (src.ne0 / 32);
    kv_store_block_kernel<kType><<<capped_blocks(warps * 32, kThreads), kThreads, 0, stream>>>(
        src, cache, first, first_dev);
    CUDA_CHECK_LAUNCH("kv_store_block_kernel");
}

}  // namespace

bool kv_store_supported(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q8_0:
        case GgmlType::Q4_0:
        case GgmlType::Q5_0: return true;
        default: return false;
    }
}

void kv_store(F32View src, const KvStoreLaunch& c, int64_t first_cell, const int32_t* first_cell_dev,
              cudaStream_t stream) {
    if (src.n_rows == 0 || src.ne0 == 0) return;
    switch (c.type) {
        case GgmlType::F32: return launch_plain<GgmlType::F32>(src, c, first_cell, first_cell_dev, stream);
        case GgmlType::F16: return launch_plain<GgmlType::F16>(src, c, first_cell, first_cell_dev, stream);
        case GgmlType::BF16: return launch_plain<GgmlType::BF16>(src, c, first_cell, first_cell_dev, stream);
        case GgmlType::Q8_0: return launch_block<GgmlType::Q8_0>(src, c, first_cell, first_cell_dev, stream);
        case GgmlType::Q4_0: return launch_block<GgmlType::Q4_0>(src, c, first_cell, first_cell_dev, stream);
        case GgmlType::Q5_0: return launch_block<GgmlType::Q5_0>(src, c, first_cell, first_cell_dev, stream);
        default:
            throw UnsupportedError(cat("kv_store: cache type ", type_traits(c.type).name,
                                       " is not supported on the CUDA backend (f32, f16, bf16, q8_0, "
                                       "q4_0, q5_0 are)"));
    }
}

}  // namespace strata::cuda
