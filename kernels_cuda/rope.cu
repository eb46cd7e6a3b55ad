// Rotary position embedding on the device, in place, NORM (adjacent pairs) and NEOX (halves)
// styles, linear freq_scale, optional freq_factors and YaRN's ramp and magnitude; the same float
// steps as the CPU op (rope.cuh).
#include "kernels_cuda/rope.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 64;
constexpr int64_t kMaxGridY = 65535;

// x [head_dim, n_heads, n_tokens]: row r is head r % n_heads of token r / n_heads.
__global__ void rope_kernel(F32View x, int64_t n_heads, RopeLaunch a) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;  // pair index
    if (i >= a.n_rot / 2) return;
    const int a_off = rope_first(a, i), b_off = rope_second(a, i);
    for (int64_t r = blockIdx.y; r < x.n_rows; r += gridDim.y) {
        float* xr = x.row(r);
        float x0 = xr[a_off], x1 = xr[b_off];
        rope_rotate(a, i, static_cast<float>(a.positions[r / n_heads]), x0, x1);
        xr[a_off] = x0;
        xr[b_off] = x1;
    }
}

}  // namespace

void rope(F32View x, int64_t n_heads, const RopeLaunch& args, cudaStream_t stream) {
    if (x.n_rows == 0 || args.n_rot == 0) return;
    const dim3 grid(blocks_for(args.n_rot / 2, kThreads),
                    static_cast<unsigned>(x.n_rows < kMaxGridY ? x.n_rows : kMaxGridY));
    rope_kernel<<<grid, kThreads, 0, stream>>>(x, n_heads, args);
    CUDA_CHECK_LAUNCH("rope_kernel");
}

}  // namespace strata::cuda
