// RMSNorm on the device: one block per row (a whole hidden state, or one head of a
// [head_dim, n_heads, n_tokens] view), f32 sums reduced in a tree, optional weight.
#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

// y = x / sqrt(mean(x²) + eps) · w. In place is safe: each thread rewrites only the elements
// it read, after block_sum has synchronised the block.
__global__ void rms_norm_kernel(F32View x, const float* __restrict__ weight, float eps, F32View y) {
    const int64_t ne0 = x.ne0;
    for (int64_t r = blockIdx.x; r < x.n_rows; r += gridDim.x) {
        const float* xr = x.row(r);
        float* yr = y.row(r);
        float s = 0.0f;
        for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) s += xr[i] * xr[i];
        s = block_sum(s);
        const float mean = s / static_cast<float>(ne0);
        const float inv = 1.0f / sqrtf(mean + eps);
        if (weight != nullptr) {
            for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) yr[i] = (xr[i] * inv) * weight[i];
        } else {
            for (int64_t i = threadIdx.x; i < ne0; i += blockDim.x) yr[i] = xr[i] * inv;
        }
    }
}

}  // namespace

void rms_norm(F32View x, const float* weight, float eps, F32View y, cudaStream_t stream) {
    if (x.n_rows == 0 || x.ne0 == 0) return;
    const int threads = x.ne0 <= 256 ? 64 : (x.ne0 <= 2048 ? 256 : 512);
    const unsigned blocks = static_cast<unsigned>(x.n_rows < kMaxGridX ? x.n_rows : kMaxGridX);
    rms_norm_kernel<<<blocks, threads, 0, stream>>>(x, weight, eps, y);
    CUDA_CHECK_LAUNCH("rms_norm_kernel");
}

}  // namespace strata::cuda
