// Flash-decoding attention for few query tokens: each block takes one token, one kv head with up
// to 8 of its query heads (GQA: K/V read once for the group) and one split of the key range;
// one warp per key cell, online softmax in f32, partial results merged by attention_combine.
#include "kernels_cuda/attention_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxGroup = 8;                  // query heads per block
constexpr int kMaxE = kAttnMaxHeadDim / 32;   // head elements per lane

size_t decode_smem_bytes(int dk, int dv) {
    return sizeof(float) * (static_cast<size_t>(kMaxGroup) * dk + 2 * kWarps * kMaxGroup +
                            static_cast<size_t>(kWarps) * kMaxGroup * dv);
}

// Writes the merged (max, sum, acc) of query row `row` for this split: the final output when
// there is one split, else the partial slot.
__device__ __forceinline__ void write_result(const AttentionLaunch& a, int64_t row, int split, int e,
                                             float m, float l, float acc) {
    if (a.n_splits == 1) {
        a.out.row(row)[e] = acc * (l > 0.0f ? 1.0f / l : 0.0f);
        return;
    }
    const int64_t slot = row * a.n_splits + split;
    a.part_acc[slot * a.dv + e] = acc;
    if (e == 0) {
        a.part_ml[2 * slot] = m;
        a.part_ml[2 * slot + 1] = l;
    }
}

__global__ void __launch_bounds__(kWarps * 32)
    attention_decode_kernel(AttentionLaunch a, int n_hgroups, int64_t chunk) {
    extern __shared__ float smem[];
    const int split = blockIdx.x;
    const int kvh = blockIdx.y / n_hgroups, hg = blockIdx.y % n_hgroups;
    const int t = blockIdx.z;
    const int group = a.n_head / a.n_head_kv;
    const int h0 = kvh * group + hg * kMaxGroup;
    const int gb = min(kMaxGroup, group - hg * kMaxGroup);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int dk = a.dk, dv = a.dv;

    const int64_t pos = a.positions[t];
    const int64_t c0 = visible_first(pos, a.window) + split * chunk;
    const int64_t c1 = min(pos + 1, c0 + chunk);  // exclusive

    float* qs = smem;                              // [gb][dk]
    float* wm = qs + kMaxGroup * dk;               // [warps][kMaxGroup] running max
    float* wl = wm + kWarps * kMaxGroup;           // [warps][kMaxGroup] running sum
    float* wacc = wl + kWarps * kMaxGroup;         // [warps][kMaxGroup][dv]
    for (int i = threadIdx.x; i < gb * dk; i += blockDim.x)
        qs[i] = a.q.row(static_cast<int64_t>(t) * a.n_head + h0 + i / dk)[i % dk];
    __syncthreads();

    const float inv_cap = a.softcap > 0.0f ? 1.0f / a.softcap : 0.0f;
    float m[kMaxGroup], l[kMaxGroup], acc[kMaxGroup][kMaxE];
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
        m[g] = -CUDART_INF_F;
        l[g] = 0.0f;
#pragma unroll
        for (int i = 0; i < kMaxE; ++i) acc[g][i] = 0.0f;
    }
    for (int64_t c = c0 + warp; c < c1; c += kWarps) {
        float kf[kMaxE], vf[kMaxE];
#pragma unroll
        for (int i = 0; i < kMaxE; ++i) {
            const int e = lane + 32 * i;
            kf[i] = e < dk ? cache_value(a.k, c, static_cast<int64_t>(kvh) * dk + e) : 0.0f;
            vf[i] = e < dv ? cache_value(a.v, c, static_cast<int64_t>(kvh) * dv + e) : 0.0f;
        }
#pragma unroll
        for (int g = 0; g < kMaxGroup; ++g) {
            if (g >= gb) break;  // block-uniform
            float s = 0.0f;
#pragma unroll
            for (int i = 0; i < kMaxE; ++i)
                if (lane + 32 * i < dk) s += qs[g * dk + lane + 32 * i] * kf[i];
            s = softcapped(warp_sum(s) * a.scale, a.softcap, inv_cap);
            const float m_new = fmaxf(m[g], s);
            const float corr = expf(m[g] - m_new);  // 0 on the first cell (m = -inf)
            const float p = expf(s - m_new);
            l[g] = l[g] * corr + p;
#pragma unroll
            for (int i = 0; i < kMaxE; ++i) acc[g][i] = acc[g][i] * corr + p * vf[i];
            m[g] = m_new;
        }
    }
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
        if (g >= gb) break;
        if (lane == 0) {
            wm[warp * kMaxGroup + g] = m[g];
            wl[warp * kMaxGroup + g] = l[g];
        }
#pragma unroll
        for (int i = 0; i < kMaxE; ++i)
            if (lane + 32 * i < dv) wacc[(warp * kMaxGroup + g) * dv + lane + 32 * i] = acc[g][i];
    }
    __syncthreads();

    // Merge the warps: one thread per (head, element).
    for (int idx = threadIdx.x; idx < gb * dv; idx += blockDim.x) {
        const int g = idx / dv, e = idx % dv;
        float mx = -CUDART_INF_F;
        for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, wm[w * kMaxGroup + g]);
        float sum = 0.0f, out = 0.0f;
        if (mx != -CUDART_INF_F) {
            for (int w = 0; w < kWarps; ++w) {
                const float f = expf(wm[w * kMaxGroup + g] - mx);
                sum += wl[w * kMaxGroup + g] * f;
                out += wacc[(w * kMaxGroup + g) * dv + e] * f;
            }
        }
        write_result(a, static_cast<int64_t>(t) * a.n_head + h0 + g, split, e, mx, sum, out);
    }
}

// out row = Σ_s acc_s·e^(m_s - M) / Σ_s l_s·e^(m_s - M) over the splits.
__global__ void attention_combine_kernel(AttentionLaunch a) {
    const int64_t row = static_cast<int64_t>(blockIdx.y) * a.n_head + blockIdx.x;
    const float* ml = a.part_ml + row * a.n_splits * 2;
    float mx = -CUDART_INF_F;
    for (int s = 0; s < a.n_splits; ++s) mx = fmaxf(mx, ml[2 * s]);
    for (int e = threadIdx.x; e < a.dv; e += blockDim.x) {
        float sum = 0.0f, out = 0.0f;
        for (int s = 0; s < a.n_splits; ++s) {
            if (ml[2 * s] == -CUDART_INF_F) continue;  // a split with no visible key
            const float f = expf(ml[2 * s] - mx);
            sum += ml[2 * s + 1] * f;
            out += a.part_acc[(row * a.n_splits + s) * a.dv + e] * f;
        }
        a.out.row(row)[e] = out * (sum > 0.0f ? 1.0f / sum : 0.0f);
    }
}

}  // namespace

bool attention_cache_supported(GgmlType type) {
    switch (type) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q8_0:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::IQ4_NL: return true;
        default: return false;
    }
}

void attention_decode(const AttentionLaunch& a, cudaStream_t stream) {
    const int group = a.n_head / a.n_head_kv;
    const int n_hgroups = (group + kMaxGroup - 1) / kMaxGroup;
    const int64_t chunk = (a.max_span + a.n_splits - 1) / a.n_splits;
    const dim3 grid(static_cast<unsigned>(a.n_splits), static_cast<unsigned>(a.n_head_kv * n_hgroups),
                    static_cast<unsigned>(a.n_tokens));
    attention_decode_kernel<<<grid, kWarps * 32, decode_smem_bytes(a.dk, a.dv), stream>>>(a, n_hgroups, chunk);
    CUDA_CHECK_LAUNCH("attention_decode_kernel");
    if (a.n_splits > 1) attention_combine(a, stream);
}

void attention_combine(const AttentionLaunch& a, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>(a.n_head), static_cast<unsigned>(a.n_tokens));
    attention_combine_kernel<<<grid, 128, 0, stream>>>(a);
    CUDA_CHECK_LAUNCH("attention_combine_kernel");
}

}  // namespace strata::cuda
