// The batch shapes of the forward pass (layer_program.h): the checks of a batch, a batch longer
// than the cache's room run in parts, and one pass over the rows of several sequences, each
// with its own KV cache (forward_batch): the matmuls see every row at once, so a weight is read
// once per step for all sequences; RoPE takes each row's own position, and KV stores and
// attention run per sequence on its own cache.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "engine/core/env_switch.h"
#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/placed_model.h"

namespace strata {
namespace {

// STRATA_BATCH_PASS_TIMES=1: how long the host takes to issue a batched pass's ops against the
// whole pass (issue to hidden states on the host), printed at exit. Issue time near the pass
// time: the host, not the device, sets the pace.
class BatchPassTimes {
public:
    void add(int64_t rows, std::chrono::steady_clock::duration issue, std::chrono::steady_clock::duration pass) {
        using Ms = std::chrono::duration<double, std::milli>;
        Row& r = by_rows_[rows];
        ++r.passes;
        r.issue_ms += Ms(issue).count();
        r.pass_ms += Ms(pass).count();
    }
    ~BatchPassTimes() {
        for (const auto& [rows, r] : by_rows_) {
            std::fprintf(stderr, "batched passes of %lld rows: %lld, issuing the ops %.2f ms, whole pass %.2f ms (mean)\n",
                         static_cast<long long>(rows), static_cast<long long>(r.passes), r.issue_ms / r.passes,
                         r.pass_ms / r.passes);
        }
    }

private:
    struct Row {
        int64_t passes = 0;
        double issue_ms = 0.0, pass_ms = 0.0;
    };
    std::map<int64_t, Row> by_rows_;
};

BatchPassTimes& batch_pass_times() {
    static BatchPassTimes times;
    return times;
}

}  // namespace

void LayerProgram::forward_batch(std::span<const int32_t> tokens, std::span<const SequenceRows> seqs,
                                 std::span<const int32_t> output_rows, std::vector<float>& hidden, float* logits) {
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
    static const bool timed = env_turned_on("STRATA_BATCH_PASS_TIMES");
    const auto start = std::chrono::steady_clock::now();
    exec_.begin_pass(n, /*stage=*/false);
    const Tensor out = run_layers(tokens, output_rows);
    // The logits straight from the hidden rows where the output matrix sits with them (one copy
    // to the host instead of the hidden rows' way out and back in: 0.6-1.5 ms of an 8-row pass
    // of a 7B on an H200).
    const auto m = static_cast<int64_t>(output_rows.size());
    const int ob = logits != nullptr && m <= kLogitRows ? device_logits_backend() : -1;
    const Tensor lg = ob >= 0 ? logits_on_device(ob, out, m) : Tensor{};
    const auto issued = std::chrono::steady_clock::now();
    for (const SeqSpan& s : seqs_) s.kv->set_used(s.pos0 + s.n);
    results_out(lg, out, m, hidden, logits);
    if (timed) batch_pass_times().add(n, issued - start, std::chrono::steady_clock::now() - start);
}

void LayerProgram::check_batch(std::span<const int32_t> tokens, std::span<const int32_t> output_rows) const {
    const int64_t n_vocab_in = model_.token_embd().tensor.ne[1];
    for (int32_t t : tokens) {
        if (t < 0 || t >= n_vocab_in) {
            throw ArgumentError(cat("token id ", t, " is outside the vocabulary of ", n_vocab_in));
        }
    }
    for (int32_t r : output_rows) {
        if (r < 0 || r >= static_cast<int64_t>(tokens.size())) {
            throw ArgumentError(cat("output row ", r, " outside a batch of ", tokens.size()));
        }
    }
}

void LayerProgram::forward_in_parts(std::span<const int32_t> tokens, KvCache& kv,
                                    std::span<const int32_t> output_rows, std::vector<float>& hidden) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t part = kv.max_batch();
    const auto n_embd = static_cast<size_t>(config_.n_embd);
    std::vector<float> all(n_embd * output_rows.size());
    std::vector<int32_t> rows;
    std::vector<size_t> columns;  // where each of rows' results goes in `all`
    std::vector<float> part_hidden;
    for (int64_t b = 0; b < n; b += part) {
        const int64_t count = std::min(part, n - b);
        rows.clear();
        columns.clear();
        for (size_t j = 0; j < output_rows.size(); ++j) {
            if (output_rows[j] >= b && output_rows[j] < b + count) {
                rows.push_back(static_cast<int32_t>(output_rows[j] - b));
                columns.push_back(j);
            }
        }
        forward(tokens.subspan(static_cast<size_t>(b), static_cast<size_t>(count)), kv, rows, part_hidden);
        for (size_t r = 0; r < rows.size(); ++r) {
            std::copy_n(part_hidden.data() + r * n_embd, n_embd, all.data() + columns[r] * n_embd);
        }
    }
    hidden = std::move(all);
}

}  // namespace strata
