// One forward pass over the rows of several sequences, each with its own KV cache
// (layer_program.h, forward_batch): the matmuls see every row at once, so a weight is read once
// per step for all sequences; RoPE takes each row's own position, and KV stores and attention
// run per sequence on its own cache.
#include <algorithm>

#include "engine/core/error.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/placed_model.h"

namespace strata {

void LayerProgram::forward_batch(std::span<const int32_t> tokens, std::span<const SequenceRows> seqs,
                                 std::span<const int32_t> output_rows, std::vector<float>& hidden) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (n == 0) throw ArgumentError("forward_batch() needs at least one token");
    check_batch(tokens, output_rows);
    seqs_.clear();
    positions_.resize(static_cast<size_t>(n));
    int64_t row0 = 0;
    for (const SequenceRows& s : seqs) {
        if (s.kv == nullptr || s.n <= 0) throw ArgumentError(cat("a sequence of the batch has no cache or no rows (", s.n, ")"));
        const int64_t pos0 = s.kv->n_used();
        if (pos0 + s.n > s.kv->n_ctx()) {
            throw ArgumentError(cat("context full: ", pos0, " positions used + ", s.n, " new tokens > ",
                                    s.kv->n_ctx(), " cells (raise -c)"));
        }
        for (const SeqSpan& other : seqs_) {
            if (other.kv == s.kv) throw ArgumentError("two sequences of one batch share a KV cache");
        }
        if (row0 + s.n > n) throw ArgumentError(cat("the sequences hold more rows than the batch's ", n, " tokens"));
        for (int64_t i = 0; i < s.n; ++i) positions_[static_cast<size_t>(row0 + i)] = static_cast<int32_t>(pos0 + i);
        seqs_.push_back(SeqSpan{s.kv, row0, s.n, pos0});
        row0 += s.n;
    }
    if (row0 != n) throw ArgumentError(cat("the sequences hold ", row0, " rows, the batch ", n, " tokens"));
    x_home_ = index_of(model_.token_embd().backend);
    const Tensor out = run_layers(tokens, output_rows);
    for (const SeqSpan& s : seqs_) s.kv->set_used(s.pos0 + s.n);
    copy_hidden_out(out, static_cast<int64_t>(output_rows.size()), hidden);
}

}  // namespace strata
