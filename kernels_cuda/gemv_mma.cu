// gemv_q8_mma: y [n, m] = W [k, n] · x [k, m] for 2-8 tokens on int8 tensor cores (a batched
// decode step of several sequences: strata serve, bench --parallel, a speculative check). The
// dp4a GEMV (gemv.cu) dots every column with every weight item on its own: at 8 columns it ran
// at a fifth of the weights' read bandwidth (H200: 56.5 us for a 4096 x 11008 Q4_K matrix
// against 13.9 us for one column). Here a block takes 16 weight rows; mma.m16n8k16.s8 dots a
// half item (16 quants, one scale) of all 16 rows with the 8 columns' q8 activations in one
// instruction.
//
// It gives every column the dp4a kernel's bits. That kernel's lane l sums the items l, l + 32,
// l + 64, ... of a row in order, and warp_sum adds the 32 lane sums in a butterfly. Here the
// block's 8 warps own 4 of those residues each (warp w: items 32j + 4w .. 32j + 4w + 3), keep
// one sum per residue in the same order, and add the 32 sums in the same butterfly at the end;
// an item's float comes from the integer dots through scale_item, as dot_q8's does, and the
// integer dots are exact. So a token's result does not depend on the tokens beside it, nor on
// which kernel the batch size picks.

#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kMmaWarps = 8;
constexpr int kWarpItems = 4;     // residues (items of each 32) a warp owns
constexpr int kRowWords = 12;     // 8 words of quants + padding: conflict-free fragment reads
static_assert(kMmaWarps * kWarpItems == 32, "the warps own the 32 lanes of the dp4a kernel between them");

// Shared memory of one warp: the 16 rows' chunk (the whole blocks that hold the warp's 4 items of
// a span) as 16-byte vectors, copied in with coalesced loads (a row may start mid-vector: one
// more vector, and one of slack because load_words reads the word after an item's last byte),
// then the 4 items' decoded quants and scales.
template <class C>
struct MmaStage {
    static constexpr int kItemsPerBlock = C::kBlockElems / 32;
    static constexpr int kChunkItems = kItemsPerBlock > kWarpItems ? kItemsPerBlock : kWarpItems;
    static_assert(kChunkItems % kItemsPerBlock == 0 && 32 % kChunkItems == 0, "whole blocks per chunk");
    static constexpr int kChunkBytes = kChunkItems / kItemsPerBlock * C::kBlockBytes;
    static constexpr int kVecs = (kChunkBytes + 15) / 16 + 1;
    static constexpr int kRowVecs = kVecs + 1;
    static constexpr int kVecsPerLane = (16 * kVecs + 31) / 32;
    static constexpr size_t kQuantOffset = size_t{16} * kRowVecs * 16;
    static constexpr size_t kScaleOffset = kQuantOffset + size_t{kWarpItems} * 16 * kRowWords * 4;
    static constexpr size_t kWarpBytes = kScaleOffset + size_t{kWarpItems} * 16 * sizeof(float4);
    static constexpr size_t kBlockSmem = kMmaWarps * kWarpBytes;
    static_assert(32 * 32 * sizeof(float4) <= kBlockSmem, "the 32 residue sums fit in the staging memory");
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

// warp_sum's butterfly over the 32 residue sums of one output: v[l] + v[l ^ 16] first, then
// ^ 8, ^ 4, ^ 2, ^ 1 (float addition commutes, so every lane of warp_sum holds this value).
__device__ __forceinline__ float butterfly(const float4* sums, int lane, int o) {
    float a[16];
#pragma unroll
    for (int l = 0; l < 16; ++l)
        a[l] = reinterpret_cast<const float*>(&sums[l * 32 + lane])[o] +
               reinterpret_cast<const float*>(&sums[(l + 16) * 32 + lane])[o];
#pragma unroll
    for (int l = 0; l < 8; ++l) a[l] = a[l] + a[l + 8];
#pragma unroll
    for (int l = 0; l < 4; ++l) a[l] = a[l] + a[l + 4];
    a[0] = a[0] + a[2];
    a[1] = a[1] + a[3];
    return a[0] + a[1];
}

// The block's end: every residue's sums through shared memory (the staging memory, now free),
// added by warp 0 in warp_sum's order and stored.
__device__ __forceinline__ void sum_residues_and_store(const float (&acc)[kWarpItems][4], uint4* smem, int warp,
                                                       int lane, int64_t row0, int64_t n, int m, F32View y) {
    __syncthreads();  // every warp is done with its staging memory
    float4* sums = reinterpret_cast<float4*>(smem);  // [32 residues][32 lanes]
#pragma unroll
    for (int i = 0; i < kWarpItems; ++i)
        sums[(kWarpItems * warp + i) * 32 + lane] = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    __syncthreads();
    if (warp != 0) return;
    const int g = lane / 4, c0 = 2 * (lane % 4), c1 = c0 + 1;
    const int64_t r_lo = row0 + g, r_hi = row0 + g + 8;
    if (c0 < m) {
        if (r_lo < n) y.row(c0)[r_lo] = butterfly(sums, lane, 0);
        if (r_hi < n) y.row(c0)[r_hi] = butterfly(sums, lane, 2);
    }
    if (c1 < m) {
        if (r_lo < n) y.row(c1)[r_lo] = butterfly(sums, lane, 1);
        if (r_hi < n) y.row(c1)[r_hi] = butterfly(sums, lane, 3);
    }
}

// Lane's share of a span: items li and li + 2 (of the warp's 4, at item offset `first` of the
// staged row) decoded into the warp's shared quants and scales (past the row's items: zeros).
template <class C>
__device__ __forceinline__ void decode_item(const uint8_t* row, int li, bool valid, uint32_t (&quants)[kRowWords],
                                            float4& scale) {
    using S = MmaStage<C>;
    Q8Item q{};
    if (valid) q = C::decode(row + (li / S::kItemsPerBlock) * C::kBlockBytes, li % S::kItemsPerBlock);
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

// The q8 activations of one lane's fragment: column g's words t and 4 + t of every item (zeros
// past m), and the (dx, sx) of columns 2t and 2t + 1 (column 0's past m: their sums are not
// stored).
struct Fragments {
    const int8_t* xcol;
    const float2* ds0;
    const float2* ds1;
    bool x_col;
    int t;
    __device__ Fragments(const int8_t* xq, const float2* xds, int64_t n_items, int m, int lane) {
        const int g = lane / 4;
        t = lane % 4;
        x_col = g < m;
        xcol = xq + static_cast<int64_t>(x_col ? g : 0) * n_items * 32;
        ds0 = xds + static_cast<int64_t>(2 * t < m ? 2 * t : 0) * n_items;
        ds1 = xds + static_cast<int64_t>(2 * t + 1 < m ? 2 * t + 1 : 0) * n_items;
    }
};

// Item `it` (the warp's i-th of the span) of all 16 rows against the 8 columns, added to the
// lane's residue sums acc (g, c0) (g, c1) (g+8, c0) (g+8, c1).
__device__ __forceinline__ void dot_item(float (&acc)[4], const uint32_t (&quants)[16][kRowWords],
                                         const float4 (&scales)[16], const Fragments& f, int64_t it, int g) {
    const float4 s_lo = scales[g], s_hi = scales[g + 8];
    const float2 x0 = __ldg(f.ds0 + it), x1 = __ldg(f.ds1 + it);
    const uint32_t* xw = reinterpret_cast<const uint32_t*>(f.xcol + it * 32);
    const uint32_t b0 = f.x_col ? __ldg(xw + f.t) : 0u, b1 = f.x_col ? __ldg(xw + 4 + f.t) : 0u;
    int d0[4], d1[4];
    mma_s8(d0, quants[g][f.t], quants[g + 8][f.t], b0);
    mma_s8(d1, quants[g][4 + f.t], quants[g + 8][4 + f.t], b1);
    acc[0] += scale_item(s_lo.x, s_lo.y, s_lo.z, d0[0], d1[0], x0.x, x0.y);
    acc[1] += scale_item(s_lo.x, s_lo.y, s_lo.z, d0[1], d1[1], x1.x, x1.y);
    acc[2] += scale_item(s_hi.x, s_hi.y, s_hi.z, d0[2], d1[2], x0.x, x0.y);
    acc[3] += scale_item(s_hi.x, s_hi.y, s_hi.z, d0[3], d1[3], x1.x, x1.y);
}

template <class C>
__global__ void __launch_bounds__(kMmaWarps * 32)
    gemv_q8_mma_kernel(const uint8_t* __restrict__ w, uint64_t nb1, int64_t n_items, int64_t n,
                       const int8_t* __restrict__ xq, const float2* __restrict__ xds, int m, F32View y) {
    using S = MmaStage<C>;
    extern __shared__ uint4 smem[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint8_t* mine = reinterpret_cast<uint8_t*>(smem) + warp * S::kWarpBytes;
    uint4* stage = reinterpret_cast<uint4*>(mine);                                         // [16][kRowVecs]
    auto* quants = reinterpret_cast<uint32_t(*)[16][kRowWords]>(mine + S::kQuantOffset);  // [4][16][12]
    auto* scales = reinterpret_cast<float4(*)[16]>(mine + S::kScaleOffset);              // [4][16]
    const int64_t row0 = static_cast<int64_t>(blockIdx.x) * 16;
    const uint64_t row_bytes = static_cast<uint64_t>(n_items / S::kItemsPerBlock) * C::kBlockBytes;
    // The warp's items of span j are 32j + first .. + 3: chunk 32j / kChunkItems + lead, at item
    // offset `at` in it.
    const int first = kWarpItems * warp, lead = first / S::kChunkItems, at = first % S::kChunkItems;
    const int64_t n_spans = (n_items - first + 31) / 32;  // spans holding any of the warp's items

    // Span j's chunk for row r: its first byte (rows past the end re-read the last one), the
    // byte's offset in its 16-byte vector, and the vectors that cover the chunk.
    auto chunk_at = [&](int64_t j, int r, int& mis, int& nv) {
        const int64_t row = row0 + r < n ? row0 + r : n - 1;
        const uint64_t begin = static_cast<uint64_t>(j * (32 / S::kChunkItems) + lead) * S::kChunkBytes;
        const uint64_t len = row_bytes - begin < S::kChunkBytes ? row_bytes - begin : S::kChunkBytes;
        const uint8_t* p = w + static_cast<uint64_t>(row) * nb1 + begin;
        mis = static_cast<int>(reinterpret_cast<uintptr_t>(p) & 15);
        nv = static_cast<int>((mis + len + 15) / 16);
        return reinterpret_cast<const uint4*>(p - mis);
    };
    uint4 regs[S::kVecsPerLane];
    auto load = [&](int64_t j) {
#pragma unroll
        for (int v8 = 0; v8 < S::kVecsPerLane; ++v8) {
            const int idx = lane + 32 * v8, r = idx / S::kVecs, v = idx % S::kVecs;
            if (r >= 16) break;
            int mis = 0, nv = 0;
            const uint4* src = chunk_at(j, r, mis, nv);
            if (v < nv) regs[v8] = __ldg(src + v);
        }
    };

    const int g = lane / 4;
    const Fragments frag(xq, xds, n_items, m, lane);
    float acc[kWarpItems][4] = {};  // one sum per residue, in dp4a's item order
    const int dr = lane % 16, dj = lane / 16;  // decoding: lane -> row dr, items dj and dj + 2

    if (n_spans > 0) load(0);
    for (int64_t j = 0; j < n_spans; ++j) {
        __syncwarp();  // every lane is done reading the previous span's chunk
        stage_chunk<C>(regs, stage, lane);
        int my_mis = 0, my_nv = 0;
        chunk_at(j, dr, my_mis, my_nv);
        const uint8_t* my_row = reinterpret_cast<const uint8_t*>(stage + dr * S::kRowVecs) + my_mis;
        __syncwarp();
        if (j + 1 < n_spans) load(j + 1);  // in flight while this span is computed

        const int64_t it0 = 32 * j + first;
        const int items = n_items - it0 < kWarpItems ? static_cast<int>(n_items - it0) : kWarpItems;
        decode_item<C>(my_row, at + dj, dj < items, quants[dj][dr], scales[dj][dr]);
        decode_item<C>(my_row, at + dj + 2, dj + 2 < items, quants[dj + 2][dr], scales[dj + 2][dr]);
        __syncwarp();
#pragma unroll
        for (int i = 0; i < kWarpItems; ++i) {
            if (i >= items) break;  // warp-uniform
            dot_item(acc[i], quants[i], scales[i], frag, it0 + i, g);
        }
    }
    sum_residues_and_store(acc, smem, warp, lane, row0, n, m, y);
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
