// CudaBackend::attention: picks the flash-decoding kernel (few query tokens) or the tiled one
// (prefill), and how many key splits keep every multiprocessor busy; K/V stay in the cache's
// type and are dequantized inside the kernels.
#include <algorithm>
#include <optional>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/op_checks.h"
#include "kernels_cuda/backend_impl.h"

namespace strata::cuda {
namespace {

constexpr int64_t kMinSplitCells = 64;   // tiled: fewer keys per split cost more to merge than they save
constexpr int kDecodeHeads = 8;          // query heads per decode block (attention_decode.cu)
constexpr int kTiledRows = 16;           // query rows per tiled block (attention_tiled.cu)
// Partials of split keys stay within this (the device op scratch reserves room for them).
constexpr uint64_t kMaxPartialBytes = 16ull << 20;

// The fewest keys a decode split takes (CudaBackendOptions::attention_decode_split_cells; 0:
// by head dim). A block's time is a chain of rounds of loads: 32 cells are one round of keys of
// the vectorized kernel at head dim 128 (half a tile of 64), but two at head dim 256, where a
// round of 4 loads a lane covers 16 cells; there 16-cell splits halve the chain (Gemma 3 270M's
// attention on an H200: 17.2 -> 13.6 us at 128 cells). The generic kernel (other cache types)
// scores 32 cells a round at any head dim; for it 16 only halves each block's work.
int64_t decode_split_cells(const CudaBackendOptions& o, int64_t head_dim) {
    if (o.attention_decode_split_cells > 0) return o.attention_decode_split_cells;
    return head_dim > 128 ? 16 : 32;
}

// A prefill's key splits: enough for two blocks per multiprocessor, each with at least
// kMinSplitCells keys.
int plan_prefill_splits(int64_t blocks, int64_t span, int sm_count) {
    constexpr int64_t kBlocksPerSm = 2;
    const int64_t want = (kBlocksPerSm * sm_count + blocks - 1) / blocks;
    const int64_t most = std::max<int64_t>(1, span / kMinSplitCells);
    return static_cast<int>(std::clamp<int64_t>(std::min(want, most), 1, kAttentionMaxSplits));
}

// A decode launch's key splits. Decode blocks are short-lived and latency-bound: more of them,
// with fewer keys each. The splits are planned for one token, never for the launch: a token's
// keys are cut alike whether it is decoded alone, beside other sequences' tokens
// (attention_rows), checked in a speculative pass or replayed in a step graph, so its result
// does not depend on the batch. The kernel activates at most one split per decode_split_cells
// of each token's own span (active_splits), so a short history still takes few.
void plan_decode_splits(const CudaBackend::Impl& s, const AttentionParams& p, AttentionLaunch& a) {
    const int group = p.n_head / p.n_head_kv;
    const int64_t token_blocks = int64_t{p.n_head_kv} * ((group + kDecodeHeads - 1) / kDecodeHeads);
    const int64_t want = (int64_t{s.options.attention_decode_blocks_per_sm} * s.sm_count + token_blocks - 1) / token_blocks;
    // Partials of the largest decode launch stay within kMaxPartialBytes.
    const uint64_t most_rows = static_cast<uint64_t>(std::max(1, s.options.attention_decode_max_tokens)) * p.n_head *
                               (p.head_dim_v + 2) * sizeof(float);
    const int64_t fit = static_cast<int64_t>(std::max<uint64_t>(1, kMaxPartialBytes / most_rows));
    a.n_splits = static_cast<int>(std::clamp<int64_t>(std::min(want, fit), 1, kAttentionMaxSplits));
    a.min_split_cells = decode_split_cells(s.options, std::max(p.head_dim_k, p.head_dim_v));
    // Splits past the most any token activates would exit at once: an eager launch leaves
    // them out (8 sequences of ~100 keys: 4 of 17). Graphs keep them for later positions.
    if (!s.capturing && !s.step.recording) a.grid_splits = active_splits(a, a.max_span);
}

// The attention of q over k_cache/v_cache (or, with bases, each token over its own sequence's
// caches, alike to k_cache/v_cache), checked by the caller.
void run_attention(CudaBackend::Impl& s, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                   const int32_t* positions, const AttentionParams& p, Tensor& out,
                   const uint8_t* const* k_bases = nullptr, const uint8_t* const* v_bases = nullptr) {
    const int64_t n_tokens = q.ne[2];
    if (n_tokens == 0) return;
    const OpScope timed = s.time_op(k_bases != nullptr ? "attention decode (sequences)"
                                    : n_tokens <= s.options.attention_decode_max_tokens ? "attention decode" : "attention prefill");

    AttentionLaunch a;
    a.q = f32_view(q);
    a.out = f32_view(out);
    a.k = CacheView{static_cast<const uint8_t*>(k_cache.data), k_cache.nb[1], k_cache.type, k_cache.ne[1]};
    a.v = CacheView{static_cast<const uint8_t*>(v_cache.data), v_cache.nb[1], v_cache.type, v_cache.ne[1]};
    a.n_tokens = static_cast<int>(n_tokens);
    a.n_head = p.n_head;
    a.n_head_kv = p.n_head_kv;
    a.dk = p.head_dim_k;
    a.dv = p.head_dim_v;
    a.scale = p.scale;
    a.softcap = p.softcap;
    a.window = p.window;
    for (int64_t t = 0; t < n_tokens; ++t) {
        const int64_t first = p.window > 0 ? std::max<int64_t>(0, positions[t] - p.window + 1) : 0;
        a.max_span = std::max<int64_t>(a.max_span, positions[t] - first + 1);
    }
    a.positions = s.stage(positions, n_tokens);
    a.k_bases = k_bases;
    a.v_bases = v_bases;

    const int group = p.n_head / p.n_head_kv;
    const bool decode = n_tokens <= s.options.attention_decode_max_tokens && n_tokens <= 65535;
    const int mma_tile = decode || !s.options.attention_tensor_cores ? 0 : attention_mma_key_tile(a, s.smem_optin);
    const bool mma = mma_tile > 0;
    if (decode) {
        plan_decode_splits(s, p, a);
    } else {
        const int rows = mma ? attention_mma_rows() : kTiledRows;
        const int64_t gb = std::min(group, rows);
        const int64_t blocks = (n_tokens + rows / gb - 1) / (rows / gb) * p.n_head_kv * ((group + rows - 1) / rows);
        a.n_splits = plan_prefill_splits(blocks, a.max_span, s.sm_count);
        const uint64_t partial_row = static_cast<uint64_t>(n_tokens) * p.n_head * (p.head_dim_v + 2) * sizeof(float);
        a.n_splits = static_cast<int>(std::clamp<uint64_t>(kMaxPartialBytes / partial_row, 1, static_cast<uint64_t>(a.n_splits)));
    }
    if (a.n_splits > 1) {
        const uint64_t slots = static_cast<uint64_t>(n_tokens) * p.n_head * a.n_splits;
        const uint64_t acc_bytes = slots * p.head_dim_v * sizeof(float);
        auto* buf = static_cast<uint8_t*>(
            s.scratch(s.attn_part, acc_bytes + slots * 2 * sizeof(float), "attention partials"));
        a.part_acc = reinterpret_cast<float*>(buf);
        a.part_ml = reinterpret_cast<float*>(buf + acc_bytes);
    }
    // The output projection's GEMV reads out next: the combine quantizes it on the way (one
    // launch fewer per layer), as rows of n_head·dv like the product's x.
    std::optional<CudaBackend::Impl::QuantizedX> fused;
    if (decode && a.n_splits > 1 && p.head_dim_v % 32 == 0 && out.is_contiguous()) {
        const Tensor out_rows =
            Tensor::contiguous(GgmlType::F32, out.data, {int64_t{p.n_head} * p.head_dim_v, n_tokens}, out.memory);
        if (s.fuse_q8(out_rows)) {
            const CudaBackend::Impl::Q8Scratch q8 = s.q8_scratch(n_tokens, out_rows.ne[0]);
            a.out_xq = q8.xq;
            a.out_xds = q8.xds;
            fused = CudaBackend::Impl::QuantizedX{true, out_rows.data, out_rows.ne, out_rows.nb, q8.buf};
        }
    }
    if (decode) {
        attention_decode(a, s.stream);
        if (fused) s.quantized_x = *fused;
    } else if (mma) {
        attention_mma(a, mma_tile, s.stream);
    } else {
        attention_tiled(a, s.stream);
    }
}

}  // namespace

void CudaBackend::attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                            int64_t n_cells, const int32_t* positions, const AttentionParams& p,
                            Tensor& out) {
    impl_->forget_quantized_x();
    if (positions != nullptr && impl_->arena->owns(positions)) {
        throw ArgumentError("attention: positions must be a host array");
    }
    check_attention(q, k_cache, v_cache, n_cells, positions, p, out);
    run_attention(*impl_, q, k_cache, v_cache, positions, p, out);
}

void CudaBackend::attention_rows(const Tensor& q, std::span<const SequenceKv> seqs, const AttentionParams& p,
                                 Tensor& out) {
    check_sequence_rows("attention_rows", q, 2, seqs);
    check_sequence_rows("attention_rows", out, 2, seqs);
    Impl& s = *impl_;
    const int64_t n = static_cast<int64_t>(seqs.size());
    const Tensor& k0 = *seqs.front().k_cache;
    const Tensor& v0 = *seqs.front().v_cache;
    // One launch: the decode kernel, caches alike.
    bool one = n <= s.options.attention_decode_max_tokens;
    std::vector<const uint8_t*>& bases = s.seq_caches;
    std::vector<int32_t>& positions = s.seq_positions;
    bases.resize(static_cast<size_t>(2 * n));
    positions.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n && one; ++i) {
        const SequenceKv& sq = seqs[static_cast<size_t>(i)];
        one = caches_alike(*sq.k_cache, k0) && caches_alike(*sq.v_cache, v0);
        bases[static_cast<size_t>(i)] = static_cast<const uint8_t*>(sq.k_cache->data);
        bases[static_cast<size_t>(n + i)] = static_cast<const uint8_t*>(sq.v_cache->data);
        positions[static_cast<size_t>(i)] = sq.position;
    }
    if (!one) return Backend::attention_rows(q, seqs, p, out);
    s.forget_quantized_x();
    for (int64_t i = 0; i < n; ++i) {  // each token's own checks, as attention() makes them
        const SequenceKv& sq = seqs[static_cast<size_t>(i)];
        check_attention(q.plane(i), *sq.k_cache, *sq.v_cache, int64_t{sq.position} + 1, &sq.position, p, out.plane(i));
    }
    const auto* dev = static_cast<const uint8_t* const*>(s.stage_bytes(bases.data(), static_cast<size_t>(2 * n) * sizeof(bases[0])));
    run_attention(s, q, k0, v0, positions.data(), p, out, dev, dev + n);
}

}  // namespace strata::cuda
