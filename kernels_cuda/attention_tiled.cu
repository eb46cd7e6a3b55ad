// Tiled attention for prefill: a block holds 16 query rows (tokens × query heads of one kv head)
// and walks the keys in tiles of 16 cells dequantized into shared memory as f32; scores, online
// softmax and the value sums stay in f32. Optional key splits reuse attention_combine.
#include "kernels_cuda/attention_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kRows = 16;     // query rows per block
constexpr int kTk = 16;       // key cells per tile
constexpr int kOPerThread = kAttnMaxHeadDim / 8;  // 8 threads share a row's dv outputs
static_assert(kTk == kRows && kRows * 8 == kThreads, "the shared-memory layout and thread roles assume this");

size_t tiled_smem_bytes(int dk, int dv) {
    return sizeof(float) * (2 * kRows * static_cast<size_t>(dk + 1) + static_cast<size_t>(kTk) * dv +
                            kRows * (kTk + 1) + 3 * kRows) +
           sizeof(int64_t) * 2 * kRows;
}

// The tile of kTk key and value cells from c0 (none past c_end: zeros) of kv head kvh,
// dequantized to f32: ks [kTk][dk + 1], vs [kTk][dv].
__device__ __forceinline__ void load_kv_tile(const AttentionLaunch& a, int kvh, int64_t c0, int64_t c_end, float* ks,
                                             float* vs) {
    const int dk = a.dk, dv = a.dv;
    for (int i = threadIdx.x; i < kTk * dk; i += kThreads) {
        const int c = i / dk, e = i % dk;
        ks[c * (dk + 1) + e] = c0 + c <= c_end ? cache_value(a.k, c0 + c, static_cast<int64_t>(kvh) * dk + e) : 0.0f;
    }
    for (int i = threadIdx.x; i < kTk * dv; i += kThreads) {
        const int c = i / dv, e = i % dv;
        vs[c * dv + e] = c0 + c <= c_end ? cache_value(a.v, c0 + c, static_cast<int64_t>(kvh) * dv + e) : 0.0f;
    }
}

// ps [kRows][kTk + 1]: each row's softcapped, scaled score of each cell of the tile, -inf where
// the row does not see the cell.
__device__ __forceinline__ void tile_scores(const AttentionLaunch& a, int64_t c0, int64_t c_end, const int64_t* rfirst,
                                            const int64_t* rlast, const float* qs, const float* ks, float inv_cap,
                                            float* ps) {
    const int dk = a.dk;
    for (int i = threadIdx.x; i < kRows * kTk; i += kThreads) {
        const int r = i / kTk, c = i % kTk;
        const int64_t cell = c0 + c;
        float s = -CUDART_INF_F;
        if (cell <= c_end && cell >= rfirst[r] && cell <= rlast[r]) {
            float dot = 0.0f;
            for (int e = 0; e < dk; ++e) dot += qs[r * (dk + 1) + e] * ks[c * (dk + 1) + e];
            s = softcapped(dot * a.scale, a.softcap, inv_cap);
        }
        ps[r * (kTk + 1) + c] = s;
    }
}

// One row's online softmax over a tile: its scores p[kTk] become probabilities against the
// running max m, the running sum l takes them, and corr is what earlier sums are rescaled by.
__device__ __forceinline__ void online_softmax_row(float* p, float& m, float& l, float& corr_out) {
    float mx = m;
    for (int c = 0; c < kTk; ++c) mx = fmaxf(mx, p[c]);
    float corr = 1.0f, sum = 0.0f;
    if (mx != -CUDART_INF_F) {
        corr = expf(m - mx);
        for (int c = 0; c < kTk; ++c) {
            p[c] = p[c] == -CUDART_INF_F ? 0.0f : expf(p[c] - mx);
            sum += p[c];
        }
        m = mx;
    } else {
        for (int c = 0; c < kTk; ++c) p[c] = 0.0f;
    }
    l = l * corr + sum;
    corr_out = corr;
}

// This thread's outputs ocol, ocol + 8, ... of its row: rescaled by corr, plus the tile's
// probabilities p[kTk] times its values vs [kTk][dv].
__device__ __forceinline__ void accumulate_values(const float* p, const float* vs, float corr, int dv, int ocol,
                                                  float (&o)[kOPerThread]) {
#pragma unroll
    for (int i = 0; i < kOPerThread; ++i) {
        const int e = ocol + 8 * i;
        if (e >= dv) break;
        float acc = o[i] * corr;
        for (int c = 0; c < kTk; ++c) acc += p[c] * vs[c * dv + e];
        o[i] = acc;
    }
}

// Output row `row`: this thread's sums of its outputs ocol, ocol + 8, ... (write_result).
__device__ __forceinline__ void store_row(const AttentionLaunch& a, int64_t row, float m, float l, int ocol,
                                          const float (&o)[kOPerThread]) {
#pragma unroll
    for (int i = 0; i < kOPerThread; ++i) {
        const int e = ocol + 8 * i;
        if (e >= a.dv) break;
        write_result(a, row, static_cast<int>(blockIdx.z), e, m, l, o[i]);
    }
}

__global__ void __launch_bounds__(kThreads)
    attention_tiled_kernel(AttentionLaunch a, int n_hgroups, int gb, int tt) {
    extern __shared__ int64_t smem_i64[];
    const int dk = a.dk, dv = a.dv;
    int64_t* rfirst = smem_i64;               // [kRows] first visible cell
    int64_t* rlast = rfirst + kRows;          // [kRows] last visible cell
    float* qs = reinterpret_cast<float*>(rlast + kRows);  // [kRows][dk + 1]
    float* ks = qs + kRows * (dk + 1);        // [kTk][dk + 1]
    float* vs = ks + kTk * (dk + 1);          // [kTk][dv]
    float* ps = vs + kTk * dv;                // [kRows][kTk + 1] scores, then probabilities
    float* rm = ps + kRows * (kTk + 1);       // [kRows] running max
    float* rl = rm + kRows;                   // [kRows] running sum
    float* rc = rl + kRows;                   // [kRows] rescale factor of this tile

    const int tid = threadIdx.x;
    const PrefillRows rows(a, n_hgroups, gb, tt);
    const int kvh = rows.kvh, t0 = rows.t0;
    auto row_valid = [&](int r) { return rows.valid(r); };
    auto out_row = [&](int r) { return rows.out_row(r); };

    for (int i = tid; i < kRows * dk; i += kThreads) {
        const int r = i / dk, e = i % dk;
        qs[r * (dk + 1) + e] = row_valid(r) ? a.q.row(out_row(r))[e] : 0.0f;
    }
    if (tid < kRows) {
        const int64_t pos = row_valid(tid) ? a.positions[t0 + tid / gb] : -1;
        rfirst[tid] = row_valid(tid) ? visible_first(pos, a.window) : 1;  // empty if invalid
        rlast[tid] = pos;
        rm[tid] = -CUDART_INF_F;
        rl[tid] = 0.0f;
    }
    __syncthreads();

    // This block's key range, cut into n_splits parts.
    const KeyRange keys = split_key_range(rfirst, rlast, rows.n_rows, row_valid, static_cast<int>(blockIdx.z), a.n_splits);
    const int64_t c_begin = keys.begin, c_end = keys.end;  // inclusive

    const float inv_cap = a.softcap > 0.0f ? 1.0f / a.softcap : 0.0f;
    const int orow = tid / 8, ocol = tid % 8;
    float o[kOPerThread];
#pragma unroll
    for (int i = 0; i < kOPerThread; ++i) o[i] = 0.0f;

    for (int64_t c0 = c_begin; c0 <= c_end; c0 += kTk) {
        load_kv_tile(a, kvh, c0, c_end, ks, vs);
        __syncthreads();
        tile_scores(a, c0, c_end, rfirst, rlast, qs, ks, inv_cap, ps);
        __syncthreads();
        if (tid < kRows) online_softmax_row(ps + tid * (kTk + 1), rm[tid], rl[tid], rc[tid]);
        __syncthreads();
        accumulate_values(ps + orow * (kTk + 1), vs, rc[orow], dv, ocol, o);
        __syncthreads();  // tiles and probabilities are rewritten next
    }

    if (!row_valid(orow)) return;
    store_row(a, out_row(orow), rm[orow], rl[orow], ocol, o);
}

}  // namespace

void attention_tiled(const AttentionLaunch& a, cudaStream_t stream) {
    const int group = a.n_head / a.n_head_kv;
    const int n_hgroups = (group + kRows - 1) / kRows;
    const int gb = group < kRows ? group : kRows;  // query heads per block
    const int tt = kRows / gb;                      // tokens per block
    const size_t smem = tiled_smem_bytes(a.dk, a.dv);
    if (smem > 48 * 1024) {  // above the default dynamic shared-memory limit (sm_75 allows 64 KiB)
        CUDA_CHECK(cudaFuncSetAttribute(attention_tiled_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
    }
    const dim3 grid(blocks_for(a.n_tokens, tt), static_cast<unsigned>(a.n_head_kv * n_hgroups),
                    static_cast<unsigned>(a.n_splits));
    attention_tiled_kernel<<<grid, kThreads, smem, stream>>>(a, n_hgroups, gb, tt);
    CUDA_CHECK_LAUNCH("attention_tiled_kernel");
    if (a.n_splits > 1) attention_combine(a, stream);
}

}  // namespace strata::cuda
