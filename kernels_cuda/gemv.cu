// Decode matmul (few tokens): y [n, m] = W [k, n] · x [k, m] with W dequantized in registers.
// gemv_q8: one warp per 1, 2 or 4 weight rows; coalesced 16-byte loads stage the rows in shared
// memory, each lane decodes its 32-element items and dots them with q8 activations via dp4a.
#include <type_traits>

#include "kernels_cuda/device_common.cuh"

namespace strata::cuda {
namespace {

constexpr int kGemvWarps = 4;  // rows per block
constexpr int kColGroup = 4;   // columns whose activations load together (dot_chunk)

// Where a product's row sums go. Dense: y [n, m]. Masked (the sparse FFN's up rows, one row per
// warp): a row whose mask bit is clear is skipped unread, an active one scales h[row].
// The columns' start addresses are worked out on the host: F32View::row() divides 64-bit
// integers, and at 8 columns the 16 stores of a warp that did it took about 30% of the kernel's
// time (H200, 4096 x 11008 Q4_K: 41 us against 28.5).
struct DenseOut {
    float* col[kGemvMaxCols] = {};
    DenseOut() = default;
    explicit DenseOut(const F32View& y) {
        for (int64_t c = 0; c < y.n_rows && c < kGemvMaxCols; ++c) col[c] = y.row(c);
    }
    __device__ bool skip(int64_t) const { return false; }
    __device__ void store(int64_t row, int c, float s) const { col[c][row] = s; }
};
struct MaskedOut {
    const uint32_t* mask;
    float* h;
    __device__ bool skip(int64_t row) const { return ((__ldg(mask + row / 32) >> (row % 32)) & 1u) == 0; }
    __device__ void store(int64_t row, int, float s) const { h[row] *= s; }
};

// A warp stages 2-3.5 KiB per step: 128 items (64 for the 34-byte Q8_0 / 36-byte Q8_1 items),
// split over its R rows. On an H200 doubling the staged bytes of Q4_K/Q6_K from 64 items took
// them from 45% to 51-56% of copy bandwidth, and R = 4 rows sharing each activation load (most
// of the L1 traffic of 4- and 5-bit types) to 59-60%; Q8_0 runs at 85% (docs/BENCHMARKS.md).
template <class C, int R>
struct Stage {
    static constexpr int kItemsPerBlock = C::kBlockElems / 32;
    // The fewest items (a multiple of 32) whose bytes are whole 16-byte vectors: 64 for Q6_K.
    static constexpr int kMinItems = (32 / kItemsPerBlock * C::kBlockBytes) % 16 == 0 ? 32 : 64;
    static constexpr int kWantItems = (C::kBlockBytes / kItemsPerBlock >= 30 ? 64 : 128) / R;
    static constexpr int kChunkItems = kWantItems > kMinItems ? kWantItems : kMinItems;
    static constexpr int kChunkBytes = kChunkItems / kItemsPerBlock * C::kBlockBytes;
    static_assert(kChunkItems % 32 == 0 && kChunkItems % kItemsPerBlock == 0, "whole items per lane");
    static_assert(kChunkBytes % 16 == 0, "a chunk keeps every row's 16-byte misalignment");
    static constexpr int kVecs = kChunkBytes / 16 + 1;  // + 1: the row may start mid-vector
    static constexpr int kVecsPerLane = (kVecs + 31) / 32;
};

// Chunk c of the R staged rows: this lane's items (every 32nd) decoded and dotted with the q8
// activations of the m columns into acc[row][col].
template <class C, int NC, int R>
__device__ __forceinline__ void dot_chunk(const uint8_t* const (&staged)[R], int64_t c, int64_t n_items,
                                          const int8_t* __restrict__ xq, const float2* __restrict__ xds, int64_t m,
                                          float (&acc)[R][NC]) {
    using S = Stage<C, R>;
    const int lane = threadIdx.x % 32;
#pragma unroll 1  // one item at a time keeps the decoded quants' registers few
    for (int u = 0; u < S::kChunkItems / 32; ++u) {
        const int it = 32 * u + lane;
        const int64_t gi = c * S::kChunkItems + it;
        if (gi >= n_items) break;
        const int offset = (it / S::kItemsPerBlock) * C::kBlockBytes, sub = it % S::kItemsPerBlock;
        Q8Item q[R];
#pragma unroll
        for (int r = 0; r < R; ++r) q[r] = C::decode(staged[r] + offset, sub);
        // A group's activation loads all issue before its dots: with one column at a time the
        // warp waited on L1 for each (H200, 8 columns: 4096 x 11008 Q4_K 28.5 -> 23.6 us, 11008 x
        // 4096 Q6_K 47.6 -> 30.9). Each sum still takes its items in the same order.
        constexpr int G = NC < kColGroup ? NC : kColGroup;
#pragma unroll
        for (int c0 = 0; c0 < NC; c0 += G) {
            if (c0 >= m) break;
            int4 x0[G], x1[G];
            float2 ds[G];
#pragma unroll
            for (int j = 0; j < G; ++j) {
                // A column past m re-reads column c0 and sums into an accumulator never stored:
                // skipping its dots instead let the compiler sink the loads back to their uses.
                const int col = c0 + j < m ? c0 + j : c0;
                const int4* xp = reinterpret_cast<const int4*>(xq + (col * n_items + gi) * 32);
                x0[j] = __ldg(xp);
                x1[j] = __ldg(xp + 1);
                ds[j] = __ldg(xds + col * n_items + gi);
            }
#pragma unroll
            for (int j = 0; j < G; ++j) {
                const int xw[8] = {x0[j].x, x0[j].y, x0[j].z, x0[j].w, x1[j].x, x1[j].y, x1[j].z, x1[j].w};
#pragma unroll
                for (int r = 0; r < R; ++r) acc[r][c0 + j] += dot_q8(q[r], xw, ds[j].x, ds[j].y);
            }
        }
    }
}

// R consecutive rows per warp, NC (>= m) columns. At most 128 registers, so at least 4 blocks
// (16 warps) share a multiprocessor and keep enough loads in flight.
// The rows of block `block` (the body of gemv_q8_kernel and of gemv_q8_batch_kernel).
template <class C, int NC, int R, class Out>
__device__ __forceinline__ void gemv_q8_rows(const uint8_t* __restrict__ w, uint64_t nb1, int64_t n_items, int64_t n,
                                             const int8_t* __restrict__ xq, const float2* __restrict__ xds, int64_t m,
                                             Out out, int64_t block) {
    using S = Stage<C, R>;
    // + 1 vector of slack: load_words may read the word after a block's last byte.
    __shared__ uint4 stage[kGemvWarps][R][S::kVecs + 1];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t row0 = (block * kGemvWarps + warp) * R;
    if (row0 >= n) return;  // the whole warp leaves; nothing below syncs the block
    if constexpr (!std::is_same_v<Out, DenseOut>) pdl_wait();  // skip() reads the mask
    if (R == 1 && out.skip(row0)) return;
    const int rows = n - row0 < R ? static_cast<int>(n - row0) : R;  // warp-uniform

    const uint64_t row_bytes = static_cast<uint64_t>(n_items / S::kItemsPerBlock) * C::kBlockBytes;
    int mis[R];
    const uint4* base[R];
    const uint8_t* staged[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        // A row past the end re-reads the last valid one; its sums are never written.
        const uint8_t* wrow = w + static_cast<uint64_t>(row0 + (r < rows ? r : rows - 1)) * nb1;
        mis[r] = static_cast<int>(reinterpret_cast<uintptr_t>(wrow) & 15);
        base[r] = reinterpret_cast<const uint4*>(wrow - mis[r]);
        staged[r] = reinterpret_cast<const uint8_t*>(stage[warp][r]) + mis[r];
    }
    const int64_t n_chunks = (n_items + S::kChunkItems - 1) / S::kChunkItems;

    // 16-byte vectors that cover chunk c of row r (each holds at least one byte of the row).
    auto n_vecs = [&](int64_t c, int r) {
        const uint64_t begin = static_cast<uint64_t>(c) * S::kChunkBytes;
        const uint64_t len = row_bytes - begin < S::kChunkBytes ? row_bytes - begin : S::kChunkBytes;
        return static_cast<int>((mis[r] + len + 15) / 16);
    };
    uint4 regs[R][S::kVecsPerLane];
    auto load = [&](int64_t c) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const uint4* src = base[r] + c * (S::kChunkBytes / 16);
            const int nv = n_vecs(c, r);
#pragma unroll
            for (int j = 0; j < S::kVecsPerLane; ++j)
                if (lane + 32 * j < nv) regs[r][j] = __ldg(src + lane + 32 * j);
        }
    };

    float acc[R][NC];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int col = 0; col < NC; ++col) acc[r][col] = 0.0f;

    load(0);
    // The weights above may load while the kernel before finishes (no kernel writes weights
    // right before their GEMV: uploads and staging are copies); x below may not.
    pdl_wait();
    for (int64_t c = 0; c < n_chunks; ++c) {
        __syncwarp();  // every lane is done reading the previous chunk
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int nv = n_vecs(c, r);
#pragma unroll
            for (int j = 0; j < S::kVecsPerLane; ++j)
                if (lane + 32 * j < nv) stage[warp][r][lane + 32 * j] = regs[r][j];
        }
        __syncwarp();
        if (c + 1 < n_chunks) load(c + 1);  // in flight while this chunk is computed

        dot_chunk<C, NC, R>(staged, c, n_items, xq, xds, m, acc);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int col = 0; col < NC; ++col) {
            const float s = warp_sum(acc[r][col]);
            if (lane == 0 && col < m && r < rows) out.store(row0 + r, col, s);
        }
    }
}

template <class C, int NC, int R, class Out>
__global__ void __launch_bounds__(kGemvWarps * 32, 4)
    gemv_q8_kernel(const uint8_t* __restrict__ w, uint64_t nb1, int64_t n_items, int64_t n,
                   const int8_t* __restrict__ xq, const float2* __restrict__ xds, int64_t m, Out out) {
    gemv_q8_rows<C, NC, R, Out>(w, nb1, n_items, n, xq, xds, m, out, blockIdx.x);
}

// Several matrices of one type and shape, one column each (a token's experts, a layer's gate and
// up): blockIdx.y is the matrix (b.w[j], or b.table[b.ids[j]]), which dots q8 activation row
// b.x_row[j] and writes b.y[j]. Chosen matrices (ids) are known only once the kernel before has
// written them: the block waits for it first; given ones load while it finishes.
template <class C, int R>
__global__ void __launch_bounds__(kGemvWarps * 32, 4)
    gemv_q8_batch_kernel(GemvBatch b, uint64_t nb1, int64_t n_items, int64_t n, const int8_t* __restrict__ xq,
                         const float2* __restrict__ xds) {
    if (b.ids != nullptr) pdl_wait();
    const int j = blockIdx.y;
    const int64_t xr = b.x_row[j];
    const uint8_t* w = b.ids != nullptr ? b.table[b.ids[j]] : b.w[j];
    DenseOut out;
    out.col[0] = b.y[j];
    gemv_q8_rows<C, 1, R, DenseOut>(w, nb1, n_items, n, xq + xr * n_items * 32, xds + xr * n_items, 1, out,
                                    blockIdx.x);
}

// Any codec, f32 activations: one warp per row, each lane a 32-element item at a time.
template <class C, class Out>
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_float_kernel(const uint8_t* __restrict__ w, uint64_t nb1, int64_t k, int64_t n_items,
                      int64_t n, F32View x, Out out) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kGemvWarps + warp;
    if (row >= n || out.skip(row)) return;
    const uint8_t* wrow = w + static_cast<uint64_t>(row) * nb1;
    const int64_t m = x.n_rows;
    float acc[kGemvMaxCols];
#pragma unroll
    for (int col = 0; col < kGemvMaxCols; ++col) acc[col] = 0.0f;
    for (int64_t item = lane; item < n_items; item += 32) {
        int sub = 0;
        const uint8_t* blk = item_block<C>(wrow, item, sub);
        const int valid = static_cast<int>(k - item * 32 < 32 ? k - item * 32 : 32);
        float v[32];
        C::dequant(blk, sub, v, valid);
#pragma unroll
        for (int col = 0; col < kGemvMaxCols; ++col) {
            if (col >= m) break;
            const float* xr = x.row(col) + item * 32;
            float s = 0.0f;
            if (valid == 32 && reinterpret_cast<uintptr_t>(xr) % 16 == 0) {
#pragma unroll
                for (int j = 0; j < 32; j += 4) {
                    const float4 x4 = __ldg(reinterpret_cast<const float4*>(xr + j));
                    s += v[j] * x4.x + v[j + 1] * x4.y + v[j + 2] * x4.z + v[j + 3] * x4.w;
                }
            } else {
#pragma unroll
                for (int j = 0; j < 32; ++j)
                    if (j < valid) s += v[j] * xr[j];
            }
            acc[col] += s;
        }
    }
#pragma unroll
    for (int col = 0; col < kGemvMaxCols; ++col) {
        const float s = warp_sum(acc[col]);
        if (lane == 0 && col < m) out.store(row, col, s);
    }
}

template <class C, int NC, int R, class Out = DenseOut>
void launch_q8(const uint8_t* w, uint64_t nb1, int64_t n_items, int64_t n, const int8_t* xq,
               const float* xds, F32View y, cudaStream_t stream, Out out = {}) {
    if constexpr (std::is_same_v<Out, DenseOut>) out = DenseOut(y);
    launch_pdl(gemv_q8_kernel<C, NC, R, Out>, dim3(blocks_for(n, kGemvWarps * R)), dim3(kGemvWarps * 32), 0, stream, w,
               nb1, n_items, n, xq, reinterpret_cast<const float2*>(xds), y.n_rows, out);
    CUDA_CHECK_LAUNCH("gemv_q8_kernel");
}

// Column counts are rounded up to a compiled width; the extra columns are skipped. More rows per
// warp share each activation load (the L1 traffic that bounds 4-8 columns) but need registers
// for their sums: R = 4 up to 2 columns, R = 2 up to 8 (sm_90 ptxas: R = 4 spills at 4 columns
// for Q5_K and at 8 for most types; R = 2 at 8 does not). Every width and row count gives a
// column the same sums in the same order (lane l takes items l, l + 32, ... whatever the
// chunk), so a token's result does not depend on the tokens beside it.
template <class C, int R>
void launch_q8_cols(const uint8_t* w, uint64_t nb1, int64_t n_items, int64_t n, const int8_t* xq,
                    const float* xds, F32View y, cudaStream_t stream) {
    const int64_t m = y.n_rows;
    if (m == 1) return launch_q8<C, 1, R>(w, nb1, n_items, n, xq, xds, y, stream);
    if (m == 2) return launch_q8<C, 2, R>(w, nb1, n_items, n, xq, xds, y, stream);
    if constexpr (R <= 2) {
        if (m <= 4) return launch_q8<C, 4, R>(w, nb1, n_items, n, xq, xds, y, stream);
        return launch_q8<C, 8, R>(w, nb1, n_items, n, xq, xds, y, stream);
    }
    throw ArgumentError(cat("gemv_q8: ", m, " columns with ", R, " rows per warp"));  // not reached
}

}  // namespace

bool gemv_q8_supported(GgmlType type) {
    bool dp4a = false;
    visit_codec(type, [&](auto codec) { dp4a = decltype(codec)::kDp4a; });
    return dp4a;
}

namespace {

// gemv_q8 for codec C: the rows per warp (see launch_q8_cols).
template <class C>
void gemv_q8_codec(const uint8_t* w, uint64_t nb1, int64_t n_items, int64_t n, const int8_t* xq, const float* xds,
                   int rows_per_warp, F32View y, cudaStream_t stream) {
    const int64_t m = y.n_rows;
    const int most = m <= 2 ? 4 : 2;
    const int r = rows_per_warp < most ? rows_per_warp : most;
    // Four rows only while their staging registers stay few (<= 8 vectors per lane).
    if constexpr (Stage<C, 4>::kVecsPerLane * 4 <= 8) {
        if (r >= 4) return launch_q8_cols<C, 4>(w, nb1, n_items, n, xq, xds, y, stream);
    }
    if (r >= 2) return launch_q8_cols<C, 2>(w, nb1, n_items, n, xq, xds, y, stream);
    launch_q8_cols<C, 1>(w, nb1, n_items, n, xq, xds, y, stream);
}

}  // namespace

void gemv_q8(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, const int8_t* xq,
             const float* xds, int rows_per_warp, F32View y, cudaStream_t stream) {
    const int64_t m = y.n_rows;
    if (n == 0 || m == 0) return;
    if (m > kGemvMaxCols) {
        throw ArgumentError(cat("gemv_q8: ", m, " columns, at most ", kGemvMaxCols));
    }
    const int64_t n_items = k / 32;
    dispatch_codec(type, "matmul", [&](auto codec) {
        using C = decltype(codec);
        if constexpr (C::kDp4a) {
            if constexpr (kHasAligned<C>) {
                if (rows_aligned16(w, nb1)) {
                    return gemv_q8_codec<typename AlignedCodec<C>::type>(w, nb1, n_items, n, xq, xds, rows_per_warp,
                                                                         y, stream);
                }
            }
            gemv_q8_codec<C>(w, nb1, n_items, n, xq, xds, rows_per_warp, y, stream);
        } else {
            throw UnsupportedError(cat("gemv_q8: type ", type_traits(type).name, " has no dp4a kernel"));
        }
    });
}

void gemv_q8_batch(GgmlType type, const GemvBatch& batch, int count, uint64_t nb1, int64_t k, int64_t n,
                   const int8_t* xq, const float* xds, int rows_per_warp, cudaStream_t stream) {
    if (n == 0 || count == 0) return;
    if (count > kGemvBatchMax) throw ArgumentError(cat("gemv_q8_batch: ", count, " matrices, at most ", kGemvBatchMax));
    const int64_t n_items = k / 32;
    dispatch_codec(type, "expert_ffn", [&](auto codec) {
        using C = decltype(codec);
        if constexpr (C::kDp4a) {
            auto go = [&](auto rows) {
                constexpr int R = decltype(rows)::value;
                const dim3 grid(blocks_for(n, kGemvWarps * R), static_cast<unsigned>(count));
                launch_pdl(gemv_q8_batch_kernel<C, R>, grid, dim3(kGemvWarps * 32), 0, stream, batch, nb1, n_items, n,
                           xq, reinterpret_cast<const float2*>(xds));
                CUDA_CHECK_LAUNCH("gemv_q8_batch_kernel");
            };
            if constexpr (Stage<C, 4>::kVecsPerLane * 4 <= 8) {
                if (rows_per_warp >= 4) return go(std::integral_constant<int, 4>{});
            }
            if (rows_per_warp >= 2) return go(std::integral_constant<int, 2>{});
            go(std::integral_constant<int, 1>{});
        } else {
            throw UnsupportedError(cat("gemv_q8_batch: type ", type_traits(type).name, " has no dp4a kernel"));
        }
    });
}

void gemv_float(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, F32View x,
                F32View y, cudaStream_t stream) {
    if (n == 0 || x.n_rows == 0) return;
    if (x.n_rows > kGemvMaxCols) {
        throw ArgumentError(cat("gemv_float: ", x.n_rows, " columns, at most ", kGemvMaxCols));
    }
    const int64_t n_items = (k + 31) / 32;
    dispatch_codec(type, "matmul", [&](auto codec) {
        using C = decltype(codec);
        gemv_float_kernel<C><<<blocks_for(n, kGemvWarps), kGemvWarps * 32, 0, stream>>>(
            w, nb1, k, n_items, n, x, DenseOut(y));
        CUDA_CHECK_LAUNCH("gemv_float_kernel");
    });
}

}  // namespace strata::cuda

namespace strata::cuda {

void gemv_q8_masked(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, const int8_t* xq,
                    const float* xds, const uint32_t* mask, float* h, cudaStream_t stream) {
    if (n == 0) return;
    dispatch_codec(type, "sparse_gated_ffn", [&](auto codec) {
        using C = decltype(codec);
        if constexpr (C::kDp4a) {
            F32View one{nullptr, k, 1, {}};
            launch_q8<C, 1, 1, MaskedOut>(w, nb1, k / 32, n, xq, xds, one, stream, MaskedOut{mask, h});
        } else {
            throw UnsupportedError(cat("gemv_q8_masked: type ", type_traits(type).name, " has no dp4a kernel"));
        }
    });
}

void gemv_float_masked(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, F32View x,
                       const uint32_t* mask, float* h, cudaStream_t stream) {
    if (n == 0 || x.n_rows != 1) return;
    const int64_t n_items = (k + 31) / 32;
    dispatch_codec(type, "sparse_gated_ffn", [&](auto codec) {
        using C = decltype(codec);
        gemv_float_kernel<C><<<blocks_for(n, kGemvWarps), kGemvWarps * 32, 0, stream>>>(
            w, nb1, k, n_items, n, x, MaskedOut{mask, h});
        CUDA_CHECK_LAUNCH("gemv_float_kernel (masked)");
    });
}

}  // namespace strata::cuda
