// Argument checks every backend shares: the parameters and shapes an op's contract
// (backend.h) requires, independent of where the memory lives. Backends add their own checks
// (memory kind, supported types) around these. ArgumentError with the values.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "engine/core/backend.h"

namespace strata {

// a.ne == b.ne, naming the op and both tensors otherwise.
void check_same_shape(std::string_view op, std::string_view what_a, const Tensor& a, std::string_view what_b,
                      const Tensor& b);

// n_head divisible by n_head_kv, positive head dims, window >= 0, softcap >= 0.
void check_attention_params(const AttentionParams& p);

// q [hd_k, n_head, n_tokens], out [hd_v, n_head, n_tokens], caches [hd·n_head_kv, cells] of the
// same cells, every token's position inside [0, n_cells), and every key a token sees (causal,
// inside the window) still held: at or after position n_cells - cells (the cache is a ring).
void check_attention_shapes(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                            const int32_t* positions, const AttentionParams& p, const Tensor& out);

// kv_store's shapes: src [row, n] rows matching cache [row, cells] (2-D), first_cell >= 0 and
// n <= cells (rows wrap around the ring: position p goes to cell p % cells).
void check_kv_store_shapes(const Tensor& src, const Tensor& cache, int64_t first_cell);

// sparse_gated_ffn's arguments: none null; gate [n_ff, n], x and y [n_embd, n], up and down_t
// [n_embd, n_ff]; n_embd a multiple of embd_multiple (a backend's block size, 1 for none).
void check_sparse_ffn_shapes(std::string_view op, const SparseFfnArgs& args, const Tensor& y,
                             int64_t embd_multiple);
// sparse_gated_activation's: gate, x and up given (down_t unused), shaped as above; h [n_ff, n].
void check_sparse_activation_shapes(std::string_view op, const SparseFfnArgs& args, const Tensor& h);

// expert_ffn's arguments: x given, one token [n_embd, 1] shaped as y; every expert's gate, up
// and down given, gate and up [n_embd, width], down [width, n_embd] (2-D).
void check_expert_ffn_shapes(std::string_view op, const ExpertFfnArgs& args, const Tensor& y);
// routed_expert_ffn's: as expert_ffn's for x, y and the experts; logits given, f32 [n_expert, 1]
// with n_expert the experts' count; 1 <= top_k.n_used <= n_expert.
void check_routed_expert_ffn_shapes(std::string_view op, const RoutedExpertFfnArgs& args, const Tensor& y);

// attention_prologue's: q [hd_k, n_head, n] and k [hd_k, n_head_kv, n] f32 3-D contiguous, v
// [ne0, n] f32 2-D contiguous; each bias as long as a token's row of its tensor, each norm hd_k
// long (f32, contiguous); positions given; both caches or neither, with rows as long as k's and
// v's token rows (kv_store's shapes).
void check_attention_prologue(std::string_view op, const AttentionPrologueArgs& a);

// kv_store_rows's and attention_rows's: t (f32, contiguous) holds one token per sequence
// (t.ne[token_dim] == seqs.size(): 1 for k and v rows, 2 for q and out [hd, heads, n]), and
// every sequence has both caches and a position >= 0.
void check_sequence_rows(std::string_view op, const Tensor& t, int token_dim, std::span<const SequenceKv> seqs);

// combine_rows's arguments: x [ne0, r] and y [ne0, n] as 2-D views with the same ne0 and
// different data; c.offsets given, starting at 0 and never decreasing; c.rows and c.weights
// given when there are entries, each row inside [0, r).
void check_combine_rows(const Tensor& x, const RowCombine& c, const Tensor& y);

}  // namespace strata
