// Rotary position embedding on the device, in place, NORM (adjacent pairs) and NEOX (halves)
// styles, linear freq_scale, optional freq_factors and YaRN's ramp and magnitude; the same float
// steps as the CPU op.
#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 64;
constexpr int64_t kMaxGridY = 65535;

// x [head_dim, n_heads, n_tokens]: row r is head r % n_heads of token r / n_heads.
__global__ void rope_kernel(F32View x, int64_t n_heads, RopeLaunch a) {
    const int half = a.n_rot / 2;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;  // pair index
    if (i >= half) return;
    const int a_off = a.neox ? i : 2 * i;
    const int b_off = a_off + (a.neox ? half : 1);
    const float inv_freq = a.inv_freq[i];
    const float factor = a.freq_factors != nullptr ? a.freq_factors[i] : 1.0f;
    const float ramp = a.yarn_ramp != nullptr ? a.yarn_ramp[i] : 0.0f;
    for (int64_t r = blockIdx.y; r < x.n_rows; r += gridDim.y) {
        const float pos = static_cast<float>(a.positions[r / n_heads]);
        float theta_x = mul_rn(pos, inv_freq);  // unscaled (extrapolated)
        if (a.freq_factors != nullptr) theta_x = __fdiv_rn(theta_x, factor);
        float theta = mul_rn(theta_x, a.freq_scale);
        if (ramp != 0.0f) theta = add_rn(mul_rn(theta, sub_rn(1.0f, ramp)), mul_rn(theta_x, ramp));
        float s = 0.0f, c = 0.0f;
        sincosf(theta, &s, &c);
        s = mul_rn(s, a.mscale);
        c = mul_rn(c, a.mscale);
        float* xr = x.row(r);
        const float x0 = xr[a_off], x1 = xr[b_off];
        xr[a_off] = sub_rn(mul_rn(x0, c), mul_rn(x1, s));
        xr[b_off] = add_rn(mul_rn(x0, s), mul_rn(x1, c));
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
