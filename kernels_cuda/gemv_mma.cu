// gemv_q8_mma: y [n, m] = W [k, n] · x [k, m] for 2-8 tokens on int8 tensor cores (a batched
// decode step of several sequences: strata serve, bench --parallel; on with
// --no-batch-invariant). The dp4a GEMV (gemv.cu) dots every column with every weight item on
// its own: at 8 columns it ran at a fifth of the weights' read bandwidth (H200: 56.5 us for a
// 4096 x 11008 Q4_K matrix against 13.9 us for one column). Here a block takes 16 weight rows:
// each warp stages a chunk of them with coalesced loads, each lane decodes one (row, item) of
// two items into shared memory (the codec's decode(), as the dp4a kernel uses), then
// mma.m16n8k16.s8 dots each half item (16 quants, one scale) with the 8 columns' q8 activations
// in one instruction (37 us for the same matrix at 8 columns). The integer sums are exact; a
// column's float sum runs in an order fixed by the shape, so its result does not depend on the
// other columns of the batch (but differs from the dp4a kernel's rounding).

#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

// A block takes 16 weight rows; its warps split the rows' items in chunks of 8 (warp w takes
// chunks w, w + kMmaWarps, ...), so a 4096 x 4096 matrix still gives ~16 warps per
// multiprocessor, and sum their partials in warp order at the end.
constexpr int kMmaWarps = 8;
constexpr int kRowWords = 12;     // 8 words of quants + padding: conflict-free fragment reads
constexpr int kItemsPerStep = 2;  // 32 lanes decode 16 rows x 2 items
constexpr int kChunkItems = 8;    // items of a row a warp stages at once (one 256-element block)

// Shared memory of one warp: the 16 rows' chunk as 16-byte vectors, copied in with coalesced
// loads (a row may start mid-vector: one more vector, and one of slack because load_words reads
// the word after an item's last byte), then a step's decoded quants and scales.
template <class C>
struct MmaStage {
    static constexpr int kItemsPerBlock = C::kBlockElems / 32;
    static_assert(kChunkItems % kItemsPerBlock == 0, "whole blocks per chunk");
    static constexpr int kChunkBytes = kChunkItems / kItemsPerBlock * C::kBlockBytes;
    static constexpr int kVecs = (kChunkBytes + 15) / 16 + 1;
    static constexpr int kRowVecs = kVecs + 1;
    static constexpr int kVecsPerLane = (16 * kVecs + 31) / 32;
    static constexpr size_t kQuantOffset = size_t{16} * kRowVecs * 16;
    static constexpr size_t kScaleOffset = kQuantOffset + size_t{kItemsPerStep} * 16 * kRowWords * 4;
    static constexpr size_t kWarpBytes = kScaleOffset + size_t{kItemsPerStep} * 16 * sizeof(float4);
    static constexpr size_t kBlockSmem = kMmaWarps * kWarpBytes;
    static_assert(kMmaWarps * 32 * sizeof(float4) <= kBlockSmem, "the partial sums fit in the staging memory");
};

// D (4 x s32) = A (16x16 s8, rows g / g+8, k 4t..4t+3) · B (16x8 s8, k 4t..4t+3, column g).
// Compute capability 8.0 and later (the host never launches the kernel below that).
__device__ __forceinline__ void mma_s8(int (&d)[4], uint32_t a_lo, uint32_t a_hi, uint32_t b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a_lo), "r"(a_hi), "r"(b), "r"(0), "r"(0), "r"(0), "r"(0));
#else
    (void)a_lo, (void)a_hi, (void)b;
    d[0] = d[1] = d[2] = d[3] = 0;
    __trap();
#endif
}

// The block's end: every warp's partial sums through shared memory (the staging memory, now
// free), added by warp 0 in warp order (the same sums for any m) and stored.
__device__ __forceinline__ void sum_warps_and_store(const float (&acc)[4], uint4* smem, int warp, int lane,
                                                    int64_t row0, int64_t n, int m, F32View y) {
    __syncthreads();  // every warp is done with its staging memory
    float4* partial = reinterpret_cast<float4*>(smem);  // [kMmaWarps][32]
    partial[warp * 32 + lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
    __syncthreads();
    if (warp != 0) return;
    float4 sum = partial[lane];
#pragma unroll
    for (int v = 1; v < kMmaWarps; ++v) {
        const float4 p = partial[v * 32 + lane];
        sum.x += p.x;
        sum.y += p.y;
        sum.z += p.z;
        sum.w += p.w;
    }
    const int g = lane / 4, c0 = 2 * (lane % 4), c1 = c0 + 1;
    const int64_t r_lo = row0 + g, r_hi = row0 + g + 8;
    if (c0 < m) {
        if (r_lo < n) y.row(c0)[r_lo] = sum.x;
        if (r_hi < n) y.row(c0)[r_hi] = sum.z;
    }
    if (c1 < m) {
        if (r_lo < n) y.row(c1)[r_lo] = sum.y;
        if (r_hi < n) y.row(c1)[r_hi] = sum.w;
    }
}

// One item's integer dots (d0: the first 16 quants, d1: the second) scaled into the lane's sums
// (g, c0) (g, c1) (g+8, c0) (g+8, c1): Σ w·x = dx·(a0·S0 + a1·S1) + b·sx per (row, column).
__device__ __forceinline__ void accumulate_item(float (&acc)[4], const int (&d0)[4], const int (&d1)[4], float4 s_lo,
                                                float4 s_hi, float2 x0, float2 x1) {
    acc[0] += x0.x * (s_lo.x * static_cast<float>(d0[0]) + s_lo.y * static_cast<float>(d1[0])) + s_lo.z * x0.y;
    acc[1] += x1.x * (s_lo.x * static_cast<float>(d0[1]) + s_lo.y * static_cast<float>(d1[1])) + s_lo.z * x1.y;
    acc[2] += x0.x * (s_hi.x * static_cast<float>(d0[2]) + s_hi.y * static_cast<float>(d1[2])) + s_hi.z * x0.y;
    acc[3] += x1.x * (s_hi.x * static_cast<float>(d0[3]) + s_hi.y * static_cast<float>(d1[3])) + s_hi.z * x1.y;
}

// Lane's share of a step: item li of its row decoded into the warp's shared quants and scales
// (past the chunk's items: zeros, which add nothing).
template <class C>
__device__ __forceinline__ void decode_item(const uint8_t* row, int li, int items, uint32_t (&quants)[kRowWords],
                                            float4& scale) {
    using S = MmaStage<C>;
    Q8Item q{};
    if (li < items) q = C::decode(row + (li / S::kItemsPerBlock) * C::kBlockBytes, li % S::kItemsPerBlock);
    uint4* dst = reinterpret_cast<uint4*>(quants);
    dst[0] = make_uint4(q.q[0], q.q[1], q.q[2], q.q[3]);
    dst[1] = make_uint4(q.q[4], q.q[5], q.q[6], q.q[7]);
    scale = make_float4(q.a0, q.a1, q.b, 0.0f);
}

// The chunk a lane holds in registers (`load` in the kernel) into the warp's staging rows.
template <class C>
__device__ __forceinline__ void stage_chunk(const uint4 (&regs)[MmaStage<C>::kVecsPerLane], uint4* stage, int lane) {
    using S = MmaStage<C>;
#pragma unroll
    for (int j = 0; j < S::kVecsPerLane; ++j) {
        const int idx = lane + 32 * j, r = idx / S::kVecs, v = idx % S::kVecs;
        if (r < 16) stage[r * S::kRowVecs + v] = regs[j];
    }
}

template <class C>
__global__ void __launch_bounds__(kMmaWarps * 32)
    gemv_q8_mma_kernel(const uint8_t* __restrict__ w, uint64_t nb1, int64_t n_items, int64_t n,
                       const int8_t* __restrict__ xq, const float2* __restrict__ xds, int m, F32View y) {
    using S = MmaStage<C>;
    extern __shared__ uint4 smem[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint8_t* mine = reinterpret_cast<uint8_t*>(smem) + warp * S::kWarpBytes;
    uint4* stage = reinterpret_cast<uint4*>(mine);                           // [16][kRowVecs]
    auto* quants = reinterpret_cast<uint32_t(*)[16][kRowWords]>(mine + S::kQuantOffset);  // [2][16][12]
    auto* scales = reinterpret_cast<float4(*)[16]>(mine + S::kScaleOffset);              // [2][16]
    const int64_t row0 = static_cast<int64_t>(blockIdx.x) * 16;
    const int64_t n_chunks = (n_items + kChunkItems - 1) / kChunkItems;
    const uint64_t row_bytes = static_cast<uint64_t>(n_items / S::kItemsPerBlock) * C::kBlockBytes;

    // Chunk c of row r: its first byte (rows past the end re-read the last one), the byte's
    // offset in its 16-byte vector, and the vectors that cover the chunk.
    auto chunk_at = [&](int64_t c, int r, int& mis, int& nv) {
        const int64_t row = row0 + r < n ? row0 + r : n - 1;
        const uint64_t begin = static_cast<uint64_t>(c) * S::kChunkBytes;
        const uint64_t len = row_bytes - begin < S::kChunkBytes ? row_bytes - begin : S::kChunkBytes;
        const uint8_t* p = w + static_cast<uint64_t>(row) * nb1 + begin;
        mis = static_cast<int>(reinterpret_cast<uintptr_t>(p) & 15);
        nv = static_cast<int>((mis + len + 15) / 16);
        return reinterpret_cast<const uint4*>(p - mis);
    };
    uint4 regs[S::kVecsPerLane];
    auto load = [&](int64_t c) {
#pragma unroll
        for (int j = 0; j < S::kVecsPerLane; ++j) {
            const int idx = lane + 32 * j, r = idx / S::kVecs, v = idx % S::kVecs;
            if (r >= 16) break;
            int mis = 0, nv = 0;
            const uint4* src = chunk_at(c, r, mis, nv);
            if (v < nv) regs[j] = __ldg(src + v);
        }
    };

    // Fragments: group g (rows g, g+8; column g of B), t (k quads; C columns 2t, 2t+1).
    const int g = lane / 4, t = lane % 4;
    const bool x_col = g < m;
    const int8_t* xcol = xq + static_cast<int64_t>(x_col ? g : 0) * n_items * 32;
    const int c0 = 2 * t, c1 = 2 * t + 1;
    const float2* ds0 = xds + static_cast<int64_t>(c0 < m ? c0 : 0) * n_items;
    const float2* ds1 = xds + static_cast<int64_t>(c1 < m ? c1 : 0) * n_items;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // (g, c0) (g, c1) (g+8, c0) (g+8, c1)
    const int dr = lane % 16, dj = lane / 16;  // decoding: lane -> (row dr, item dj) of a step

    if (warp < n_chunks) load(warp);
    for (int64_t c = warp; c < n_chunks; c += kMmaWarps) {
        __syncwarp();  // every lane is done reading the previous chunk
        stage_chunk<C>(regs, stage, lane);
        int my_mis = 0, my_nv = 0;
        chunk_at(c, dr, my_mis, my_nv);
        const uint8_t* my_row = reinterpret_cast<const uint8_t*>(stage + dr * S::kRowVecs) + my_mis;
        __syncwarp();
        if (c + kMmaWarps < n_chunks) load(c + kMmaWarps);  // in flight while this chunk is computed

        const int64_t first = c * kChunkItems;
        const int items = n_items - first < kChunkItems ? static_cast<int>(n_items - first) : kChunkItems;
        for (int s = 0; s < items; s += kItemsPerStep) {
            decode_item<C>(my_row, s + dj, items, quants[dj][dr], scales[dj][dr]);
            __syncwarp();
#pragma unroll
            for (int j = 0; j < kItemsPerStep; ++j) {
                if (s + j >= items) break;  // warp-uniform
                const int64_t it = first + s + j;
                const float4 s_lo = scales[j][g], s_hi = scales[j][g + 8];
                const float2 x0 = __ldg(ds0 + it), x1 = __ldg(ds1 + it);
                const uint32_t* xw = reinterpret_cast<const uint32_t*>(xcol + it * 32);
                const uint32_t b0 = x_col ? __ldg(xw + t) : 0u, b1 = x_col ? __ldg(xw + 4 + t) : 0u;
                int d0[4], d1[4];
                mma_s8(d0, quants[j][g][t], quants[j][g + 8][t], b0);
                mma_s8(d1, quants[j][g][4 + t], quants[j][g + 8][4 + t], b1);
                accumulate_item(acc, d0, d1, s_lo, s_hi, x0, x1);  // Σ w·x = dx·(a0·S0 + a1·S1) + b·sx
            }
            __syncwarp();  // every lane is done with the step's quants before they are overwritten
        }
    }
    sum_warps_and_store(acc, smem, warp, lane, row0, n, m, y);
}

}  // namespace

void gemv_q8_mma(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, const int8_t* xq,
                 const float* xds, F32View y, cudaStream_t stream) {
    const int64_t m = y.n_rows;
    if (n == 0 || m == 0) return;
    if (m > 8) throw ArgumentError(cat("gemv_q8_mma: ", m, " columns, at most 8"));
    const int64_t n_items = k / 32;
    dispatch_codec(type, "matmul", [&](auto codec) {
        using C = decltype(codec);
        if constexpr (C::kDp4a) {
            allow_dynamic_smem<gemv_q8_mma_kernel<C>>(static_cast<int>(MmaStage<C>::kBlockSmem));
            gemv_q8_mma_kernel<C><<<blocks_for(n, 16), kMmaWarps * 32, MmaStage<C>::kBlockSmem, stream>>>(
                w, nb1, n_items, n, xq, reinterpret_cast<const float2*>(xds), static_cast<int>(m), y);
            CUDA_CHECK_LAUNCH("gemv_q8_mma_kernel");
        } else {
            throw UnsupportedError(cat("gemv_q8_mma: type ", type_traits(type).name, " has no dp4a kernel"));
        }
    });
}

}  // namespace strata::cuda
