// Top-k routing of one token on the device (launch.h route_experts_top_k), the arithmetic of the
// host's route_top_k (engine/core/expert_routing.h): softmax with the max subtracted, k passes
// of an argmax (the lower index on a tie), the kept weights renormalised and scaled. One warp.
#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

__global__ void route_top_k_kernel(const float* __restrict__ logits, int n_expert, int k, bool norm_topk,
                                   float scale, int32_t* __restrict__ ids, float* __restrict__ weights) {
    __shared__ float prob[kRouteMaxExperts];
    const int lane = static_cast<int>(threadIdx.x);
    float m = -INFINITY;
    for (int e = lane; e < n_expert; e += 32) m = fmaxf(m, logits[e]);
    m = warp_max(m);
    float sum = 0.0f;
    for (int e = lane; e < n_expert; e += 32) sum += prob[e] = expf(logits[e] - m);
    sum = warp_sum(sum);
    for (int e = lane; e < n_expert; e += 32) prob[e] /= sum;
    __syncwarp();
    float kept = 0.0f;
    for (int j = 0; j < k; ++j) {
        // Each lane's best among its experts (ascending, so a tie keeps the lower index), then
        // the warp's: the larger probability, or on a tie the lower index.
        float best = -1.0f;
        int at = n_expert;
        for (int e = lane; e < n_expert; e += 32) {
            if (prob[e] > best) {
                best = prob[e];
                at = e;
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            const float b = __shfl_xor_sync(kFullMask, best, o);
            const int a = __shfl_xor_sync(kFullMask, at, o);
            if (b > best || (b == best && a < at)) {
                best = b;
                at = a;
            }
        }
        kept += best;
        if (lane == 0) {
            ids[j] = at;
            weights[j] = best;
            prob[at] = -1.0f;  // taken
        }
        __syncwarp();
    }
    const float f = norm_topk ? scale / kept : scale;
    for (int j = lane; j < k; j += 32) weights[j] *= f;
}

}  // namespace

void route_experts_top_k(const float* logits, int64_t n_expert, const ExpertTopK& p, int32_t* ids, float* weights,
                         cudaStream_t stream) {
    if (n_expert < 1 || n_expert > kRouteMaxExperts || p.n_used < 1 || p.n_used > n_expert) {
        throw ArgumentError(cat("route_experts_top_k: top-", p.n_used, " of ", n_expert, " experts (at most ",
                                kRouteMaxExperts, ")"));
    }
    route_top_k_kernel<<<1, 32, 0, stream>>>(logits, static_cast<int>(n_expert), static_cast<int>(p.n_used),
                                             p.norm_topk, p.scale, ids, weights);
    CUDA_CHECK_LAUNCH("route_top_k_kernel");
}

}  // namespace strata::cuda
