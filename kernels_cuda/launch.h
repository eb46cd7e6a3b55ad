// Internal to kernels_cuda: the kernel launchers the backend calls, one group per .cu file.
// Arguments are raw device pointers and plain structs (C++17: nvcc compiles the .cu side).
// Every launcher only enqueues on `stream` and checks the launch; none synchronizes.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "engine/core/expert_routing.h"
#include "engine/core/op_types.h"
#include "engine/core/tensor.h"
#include "quant/ggml_type.h"

namespace strata::cuda {

#if defined(__CUDACC__)
#define STRATA_HOST_DEVICE __host__ __device__
#else
#define STRATA_HOST_DEVICE
#endif

// Rows of a view numbered over ne[1], ne[2], ne[3] (ggml order), with byte strides.
struct RowLayout {
    int64_t ne1 = 1, ne2 = 1;
    uint64_t nb1 = 0, nb2 = 0, nb3 = 0;
};

STRATA_HOST_DEVICE inline uint64_t row_offset(const RowLayout& l, int64_t r) {
    const int64_t i1 = r % l.ne1;
    const int64_t rest = r / l.ne1;
    return static_cast<uint64_t>(i1) * l.nb1 + static_cast<uint64_t>(rest % l.ne2) * l.nb2 +
           static_cast<uint64_t>(rest / l.ne2) * l.nb3;
}

inline RowLayout row_layout(const Tensor& t) {
    return RowLayout{t.ne[1], t.ne[2], t.nb[1], t.nb[2], t.nb[3]};
}

// An f32 tensor on the device: rows of ne0 contiguous floats.
struct F32View {
    uint8_t* data = nullptr;
    int64_t ne0 = 0;
    int64_t n_rows = 0;
    RowLayout rows;
    STRATA_HOST_DEVICE float* row(int64_t r) const {
        return reinterpret_cast<float*>(data + row_offset(rows, r));
    }
};

inline F32View f32_view(const Tensor& t) {
    return F32View{static_cast<uint8_t*>(t.data), t.ne[0], t.n_rows(), row_layout(t)};
}

// ---- convert.cu: weights and activations between formats.
// Types with a device dequantizer (get_rows tables, matmul weights).
bool codec_supported(GgmlType type);
// out row i = table row ids[i] as f32; ids on the device, already range-checked.
void get_rows(GgmlType type, const uint8_t* table, uint64_t table_nb1, int64_t ne0,
              const int32_t* ids, int64_t n, F32View out, cudaStream_t stream);
// dst [rows][k] f16 = rows [0, rows) of w (row stride nb1) dequantized.
void dequantize_rows_f16(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t rows,
                         uint16_t* dst, cudaStream_t stream);
// dst [m][k] f16 = x rows (round to nearest even).
void convert_rows_f16(F32View x, uint16_t* dst, cudaStream_t stream);
// xq [m][k] int8 and xds [m][k/32][2] = (d, d·Σq) of each 32-element block of x (k % 32 == 0).
void quantize_rows_q8(F32View x, int8_t* xq, float* xds, cudaStream_t stream);

// ---- gemv.cu: y [n, m] = W [k, n] · x [k, m] for few tokens, weights dequantized in registers.
// W types with a dp4a kernel (activations quantized to q8 by quantize_rows_q8).
bool gemv_q8_supported(GgmlType type);
// rows_per_warp (1, 2 or 4): weight rows one warp streams together, sharing each x load.
void gemv_q8(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, const int8_t* xq,
             const float* xds, int rows_per_warp, F32View y, cudaStream_t stream);
// The same product for 1-8 tokens on int8 tensor cores (gemv_mma.cu; compute capability 8.0+):
// at 8 tokens several times faster than gemv_q8, whose cost grows with every column. A column's
// result does not depend on m.
void gemv_q8_mma(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, const int8_t* xq,
                 const float* xds, F32View y, cudaStream_t stream);
// Several matrices of one type and shape [k, n], one column each: matrix j dots row x_row[j] of
// the q8 activations (quantize_rows_q8's layout over rows of k) into y[j] (n floats).
// With `ids` (device int32 [count]) matrix j is instead table[ids[j]] (a device array of
// pointers): the matrices a kernel chose (routed experts), read without the host.
inline constexpr int kGemvBatchMax = 16;
struct GemvBatch {
    const uint8_t* w[kGemvBatchMax] = {};
    float* y[kGemvBatchMax] = {};
    int32_t x_row[kGemvBatchMax] = {};
    const int32_t* ids = nullptr;
    const uint8_t* const* table = nullptr;
};
void gemv_q8_batch(GgmlType type, const GemvBatch& batch, int count, uint64_t nb1, int64_t k, int64_t n,
                   const int8_t* xq, const float* xds, int rows_per_warp, cudaStream_t stream);
// Any codec type, f32 activations (the reference-precision path); m <= kGemvMaxCols.
constexpr int kGemvMaxCols = 8;
void gemv_float(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, F32View x,
                F32View y, cudaStream_t stream);

// The sparse FFN's up rows (sparse_ffn.cu): h[i] *= (W row i)·x for the neurons whose bit is set
// in mask (u32 words, bit i%32 of word i/32), one token; the other rows are not read.
void gemv_q8_masked(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, const int8_t* xq,
                    const float* xds, const uint32_t* mask, float* h, cudaStream_t stream);
void gemv_float_masked(GgmlType type, const uint8_t* w, uint64_t nb1, int64_t k, int64_t n, F32View x,
                       const uint32_t* mask, float* h, cudaStream_t stream);

// ---- sparse_ffn.cu: activation sparsity (CATS) for one token, inside a graph (no host sync).
struct SparseMaskLaunch {
    const float* gate = nullptr;  // [n_ff] gate·x
    float* h = nullptr;           // [n_ff] out: act(gate) where active, else 0
    uint32_t* mask = nullptr;     // [ceil(n_ff/32)] out
    int64_t n_ff = 0;
    Activation act = Activation::Silu;  // Silu or GeluTanh
    float threshold = 0.0f;
    uint64_t* counts = nullptr;   // device [evaluated, active] += (n_ff, active)
};
void sparse_mask(const SparseMaskLaunch& a, cudaStream_t stream);
// Types the down kernel reads (every codec type: it dequantizes items as quant/ does).
bool sparse_down_supported(GgmlType type);
struct SparseDownLaunch {
    GgmlType type = GgmlType::Q8_0;
    const uint8_t* down_t = nullptr;  // [n_embd, n_ff] neuron-major rows (n_embd % 32 == 0)
    uint64_t nb1 = 0;
    int64_t n_embd = 0, n_ff = 0;
    const float* h = nullptr;         // [n_ff]
    const uint32_t* mask = nullptr;
    float* partial = nullptr;         // [ceil(n_ff/kSparseDownChunk)][n_embd] scratch
    float* y = nullptr;               // [n_embd] out
};
void sparse_down(const SparseDownLaunch& a, cudaStream_t stream);
// y = act(gate)·up where |act(gate)| > threshold, else 0 (y may alias gate or up); counts
// [elements, kept] on the device.
void thresholded_gated_activation(F32View gate, F32View up, Activation act, float threshold, F32View y,
                                  uint64_t* counts, cudaStream_t stream);

// ---- norm.cu, elementwise.cu, rope.cu: f32 ops on views (y may alias x where Backend says).
// rms_norm and gated_activation also write y as q8 blocks (quantize_rows_q8's layout) when xq
// and xds are given and the row length is a multiple of 32; they return whether they did.
// With delta given (data not null): x = x + delta first, in place (add_rms_norm), delta normed
// with delta_weight first when that is given; y must not alias x.
bool rms_norm(F32View x, const float* weight, float eps, F32View y, int8_t* xq, float* xds, cudaStream_t stream,
              F32View delta = {}, const float* delta_weight = nullptr);
void add(F32View a, F32View b, bool broadcast_b, F32View y, cudaStream_t stream);
void scale(F32View x, float s, cudaStream_t stream);
// y row t (+)= Σ_{j in [offsets[t], offsets[t+1])} weights[j] · x row rows[j] (device arrays,
// checked); with `accumulate` the sum is added to y, else it replaces y.
void combine_rows(F32View x, const int32_t* offsets, const int32_t* rows, const float* weights, F32View y,
                  bool accumulate, cudaStream_t stream);
void softcap(F32View x, float cap, cudaStream_t stream);
bool gated_activation(F32View gate, F32View up, Activation act, F32View y, int8_t* xq, float* xds,
                      cudaStream_t stream);
// Top-k routing of one token (engine/core/expert_routing.h route_top_k, the same arithmetic):
// logits [n_expert] -> ids [k] and weights [k], all device arrays; n_expert <= kRouteMaxExperts.
inline constexpr int64_t kRouteMaxExperts = 256;
void route_experts_top_k(const float* logits, int64_t n_expert, const ExpertTopK& p, int32_t* ids, float* weights,
                         cudaStream_t stream);
// slot[0] = token, slot[1] = position (device int32 [2]): the values a replayed step graph reads.
void set_step_slot(int32_t* slot, int32_t token, int32_t position, cudaStream_t stream);

// x [head_dim, n_heads, n_tokens] in place; inv_freq [n_rot/2] = base^(-2i/n_rot) computed on
// the host as the CPU does; freq_factors [n_rot/2] or null; yarn_ramp [n_rot/2] (the weight of
// the unscaled angle, engine/core/rope_yarn.h) or null for none; mscale multiplies cos and sin.
struct RopeLaunch {
    const int32_t* positions = nullptr;
    const float* inv_freq = nullptr;
    const float* freq_factors = nullptr;
    const float* yarn_ramp = nullptr;
    float freq_scale = 1.0f;
    float mscale = 1.0f;
    int n_rot = 0;
    bool neox = true;
};
void rope(F32View x, int64_t n_heads, const RopeLaunch& args, cudaStream_t stream);

// ---- kv_store.cu: cache cell (first_cell + i) % cells = src row i converted (a ring when cells
// is less than the positions); first_cell is read on the device from first_cell_dev when that is
// not null (a replayed decode graph).
bool kv_store_supported(GgmlType type);
struct KvStoreLaunch {
    uint8_t* cache = nullptr;
    uint64_t nb1 = 0;
    int64_t cells = 0;
    GgmlType type = GgmlType::F16;
    // A batched decode step: src row r goes to cache row_cache[r] at position row_position[r]
    // (device arrays; the caches alike in type, row size and cells), not to `cache`.
    uint8_t* const* row_cache = nullptr;
    const int32_t* row_position = nullptr;
};
void kv_store(F32View src, const KvStoreLaunch& cache, int64_t first_cell, const int32_t* first_cell_dev,
              cudaStream_t stream);

// ---- attention_prologue.cu: attention's prologue for n_tokens (Backend::attention_prologue) in
// one launch. q rows [head_dim] n_head per token, k rows n_head_kv per token, v one row per
// token; positions in rope; k and v stored at first_cell (first_dev on the device when not null)
// when `store`. The caller checked the shapes, that head_dim <= kPrologueMaxHeadDim, the cache
// types (kv_store_supported) and that block types meet whole 32-blocks.
constexpr int64_t kPrologueMaxHeadDim = 2048;
struct PrologueLaunch {
    F32View q, k, v;
    int64_t head_dim = 0, n_head = 0, n_head_kv = 0, n_tokens = 0;
    const float* q_bias = nullptr;
    const float* k_bias = nullptr;
    const float* v_bias = nullptr;
    const float* q_norm = nullptr;
    const float* k_norm = nullptr;
    float eps = 0.0f;
    RopeLaunch rope;
    bool store = false;
    KvStoreLaunch k_cache, v_cache;
    int64_t first_cell = 0;
    const int32_t* first_dev = nullptr;
};
void attention_prologue(const PrologueLaunch& args, cudaStream_t stream);

// ---- attention_*.cu
bool attention_cache_supported(GgmlType type);
constexpr int kAttnMaxHeadDim = 256;

struct CacheView {
    const uint8_t* data = nullptr;
    uint64_t nb1 = 0;  // bytes per cell
    GgmlType type = GgmlType::F16;
    int64_t cells = 0;  // position p is in cell p % cells (a ring; a full cache never wraps)
};

// Key splits of one attention launch, at most (the combine keeps a factor per split in shared
// memory).
constexpr int kAttentionMaxSplits = 256;

struct AttentionLaunch {
    F32View q;      // [dk, n_head, n_tokens]
    F32View out;    // [dv, n_head, n_tokens]
    CacheView k, v;
    // A batched decode step: token t reads its own sequence's caches k_bases[t] / v_bases[t]
    // (device arrays; the caches alike in type, row size and cells), not k.data / v.data.
    const uint8_t* const* k_bases = nullptr;
    const uint8_t* const* v_bases = nullptr;
    const int32_t* positions = nullptr;  // [n_tokens], device
    int n_tokens = 0, n_head = 0, n_head_kv = 0, dk = 0, dv = 0;
    float scale = 1.0f, softcap = 0.0f;
    int32_t window = 0;
    int64_t max_span = 0;   // most cells any token sees
    int n_splits = 1;       // key-range splits; > 1 needs the partial buffers below
    // Decode: a token uses at most one split per min_split_cells of its visible keys (the rest
    // of the n_splits blocks exit at once; active_splits below). 0: all splits.
    int min_split_cells = 0;
    // Decode: blocks launched along the splits (0: n_splits). An eager launch takes only as
    // many as its tokens activate; a recorded graph, replayed at later positions, takes all.
    int grid_splits = 0;
    float* part_acc = nullptr;  // [n_tokens][n_head][n_splits][dv]
    float* part_ml = nullptr;   // [n_tokens][n_head][n_splits][2] (max, sum)
    // With out_xq (n_splits > 1, dv % 32 == 0): the combine also quantizes out, as rows of
    // n_head·dv, to q8 blocks as quantize_rows_q8 would (xq [n_tokens][n_head·dv], xds
    // [n_tokens][n_head·dv/32]) for the output projection's GEMV.
    int8_t* out_xq = nullptr;
    float* out_xds = nullptr;
};
// Splits that hold keys for a token that sees `span` cells: all n_splits, or with
// min_split_cells set (decode) at most one per min_split_cells keys. Decode plans n_splits for
// one token at any position (backend_attention.cpp), so that a token's result does not depend
// on the batch or on a step graph; without this cut, early positions would cut their few keys
// into slivers, each a block to run and a partial for the combine to read (7B decode on an
// H200: 284 tok/s at -c 4096 against 307 at -c 130). The kernels ask it per token; an eager
// launch's grid takes it for the launch's longest span (grid_splits).
STRATA_HOST_DEVICE inline int active_splits(const AttentionLaunch& a, int64_t span) {
    if (a.min_split_cells <= 0) return a.n_splits;
    const int64_t want = (span + a.min_split_cells - 1) / a.min_split_cells;
    return static_cast<int>(want < 1 ? 1 : (want < a.n_splits ? want : a.n_splits));
}

// Flash-decoding: one block per (token, kv head, head group, key split).
void attention_decode(const AttentionLaunch& a, cudaStream_t stream);
// Tiled: one block per (16 query rows of one kv head's group, key split).
void attention_tiled(const AttentionLaunch& a, cudaStream_t stream);
// Prefill on tensor cores (attention_mma.cu): one block per (64 query rows of one kv head's
// group, key split); Q, K, V and P rounded to f16, f32 softmax and sums. Supported: dk == dv of
// 64, 128 or 256 whose tiles fit smem_limit bytes (the device's opt-in shared memory per block).
int attention_mma_rows();
// The key tile (64 or 32 cells) the kernel takes for `a` within smem_limit bytes; 0 where it
// does not run (head dims, cache types, shared memory).
int attention_mma_key_tile(const AttentionLaunch& a, size_t smem_limit);
// Launches with a key tile attention_mma_key_tile gave.
void attention_mma(const AttentionLaunch& a, int key_tile, cudaStream_t stream);
// Merges the n_splits partials into out (used by both when n_splits > 1).
void attention_combine(const AttentionLaunch& a, cudaStream_t stream);

}  // namespace strata::cuda
