// kv_store on the device: f32 K/V rows of new tokens into cache cells (position p in cell
// p % cells: a ring for sliding-window layers) as F32, F16, BF16, Q8_0, Q4_0 or Q5_0, bit-identical
// to quant/'s reference quantizers (kv_codec.cuh; one warp per 32-element block).
#include "kernels_cuda/kv_codec.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;

template <GgmlType kType>
__global__ void kv_store_plain_kernel(F32View src, KvStoreLaunch cache, int64_t first,
                                      const int32_t* first_dev) {
    if (first_dev != nullptr) first = *first_dev;
    const int64_t total = src.n_rows * src.ne0;
    for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < total;
         t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        const int64_t r = t / src.ne0, e = t % src.ne0;
        store_plain<kType>(src.row(r)[e], store_row(cache, first, r), e);
    }
}

// One warp per 32-element block; lane j holds element j.
template <GgmlType kType>
__global__ void kv_store_block_kernel(F32View src, KvStoreLaunch cache, int64_t first,
                                      const int32_t* first_dev) {
    if (first_dev != nullptr) first = *first_dev;
    const int lane = threadIdx.x % 32;
    const int64_t per_row = src.ne0 / 32;
    const int64_t total = src.n_rows * per_row;
    const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
    for (int64_t w = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32; w < total;
         w += warps) {
        const int64_t r = w / per_row, blk = w % per_row;
        store_block_warp<kType>(src.row(r)[blk * 32 + lane], lane,
                                store_row(cache, first, r) + blk * kKvBlockBytes<kType>);
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
