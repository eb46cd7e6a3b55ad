// Internal to the .cu files: one RoPE pair's rotation, the same float steps as the CPU op
// (rope.cu, attention_prologue.cu).
#pragma once

#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {

// The offsets of pair i's two elements within a head.
__device__ __forceinline__ int rope_first(const RopeLaunch& a, int i) { return a.neox ? i : 2 * i; }
__device__ __forceinline__ int rope_second(const RopeLaunch& a, int i) {
    return rope_first(a, i) + (a.neox ? a.n_rot / 2 : 1);
}

// (x0, x1) of pair i rotated for position pos: linear freq_scale, optional freq_factors and
// YaRN's ramp and magnitude.
__device__ __forceinline__ void rope_rotate(const RopeLaunch& a, int i, float pos, float& x0, float& x1) {
    float theta_x = mul_rn(pos, a.inv_freq[i]);  // unscaled (extrapolated)
    if (a.freq_factors != nullptr) theta_x = __fdiv_rn(theta_x, a.freq_factors[i]);
    float theta = mul_rn(theta_x, a.freq_scale);
    const float ramp = a.yarn_ramp != nullptr ? a.yarn_ramp[i] : 0.0f;
    if (ramp != 0.0f) theta = add_rn(mul_rn(theta, sub_rn(1.0f, ramp)), mul_rn(theta_x, ramp));
    float s = 0.0f, c = 0.0f;
    sincosf(theta, &s, &c);
    s = mul_rn(s, a.mscale);
    c = mul_rn(c, a.mscale);
    const float r0 = sub_rn(mul_rn(x0, c), mul_rn(x1, s));
    const float r1 = add_rn(mul_rn(x0, s), mul_rn(x1, c));
    x0 = r0;
    x1 = r1;
}

}  // namespace strata::cuda
