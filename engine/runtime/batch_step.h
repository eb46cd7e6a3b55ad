// BatchStep: one decode step for several sessions in one forward pass (continuous batching in
// `strata serve`). Each session contributes its next token as one row (on host placements, or
// a prompt chunk as several: step_rows); every matmul runs over
// all rows, so a weight — streamed from RAM or disk, or read from VRAM — is read once per step
// for all sequences, while RoPE, KV stores and attention use each session's own position and
// KV cache (LayerProgram::forward_batch). Sessions join and leave at every call.
// On host backends a session's logits are bit-identical to Session::feed() of the same token
// (the CPU matmul's row results do not depend on the batch size below oneDNN's threshold, and
// groups stay under kMaxRows). With a device backend in the placement, groups have at most
// kMaxDeviceRows rows: the CUDA matmul's GEMV path (q8 activations, as for one token) serves up
// to 8 tokens in one launch (24 in chunks of 8), a larger batch takes its f16 GEMM, whose
// rounding differs. The logits are computed where the output matrix sits with the hidden rows
// (LayerProgram::forward_batch).
// Its own LayerProgram holds the batch's activations (decode-sized with a device: a few rows;
// up to kMaxRows on host placements), allocated through the backends, so a device budget
// counts them; it never ships weights to the GPU.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/runtime/layer_program.h"
#include "engine/runtime/session.h"

namespace strata {

class BatchStep {
public:
    // Sessions that join must be built on `placed` (Runtime::new_session or
    // Session(placed, params)); `placed` must outlive the step. sparse: as the sessions'.
    explicit BatchStep(const PlacedModel& placed, const SparseFfn* sparse = nullptr);

    // Rows per forward pass, at most (host-only placements, and with a device backend): a
    // larger batch runs in groups of this many.
    static constexpr int64_t kMaxRows = 64;
    static constexpr int64_t kMaxDeviceRows = 8;
    int64_t max_rows() const { return max_rows_; }

    // Evaluates tokens[i] after the tokens of sessions[i] (distinct sessions, one token each)
    // and returns the logits [n_vocab, n]: row i the prediction for sessions[i], valid until the
    // next call. Throws ArgumentError, naming the session, for a session of another placement
    // or a full context; on any error no session has taken its token.
    std::span<const float> decode(std::span<Session* const> sessions, std::span<const TokenId> tokens);

    // One pass over the rows of several sessions, decoding ones and prefilling ones together
    // (Dynamic SplitFuse): chunks[i], one token or a prompt chunk, is evaluated after the tokens
    // of sessions[i] (distinct sessions). Host placements only (takes_prompt_rows()); the rows
    // together at most max_rows(), each chunk within its cache's max_batch(). Returns the
    // logits of each session's last row [n_vocab, n], valid until the next call. A session's
    // results are bit-identical to Session::feed() of its chunk alone: host matmuls give a row
    // the same sums at any row count below oneDNN's threshold (128 > kMaxRows), and attention
    // runs per sequence. Errors as decode(); on any error no session has taken its tokens.
    std::span<const float> step_rows(std::span<Session* const> sessions,
                                     std::span<const std::span<const TokenId>> chunks);
    // Whether step_rows() may be used: no device backend in the placement (a device's products
    // of more than kMaxDeviceRows rows take another kernel, so a prompt's rows beside decode
    // rows would change their results).
    bool takes_prompt_rows() const { return host_only_; }

    // Whether `session` may join (it was built on this step's placement).
    bool accepts(const Session& session) const { return &session.placed() == &placed_; }
    // Bytes the step's activations hold on `backend`.
    uint64_t activation_bytes(const Backend* backend) const { return program_.activation_bytes(backend); }

private:
    void check_sessions(std::span<Session* const> sessions, size_t n_chunks) const;
    void run_group(std::span<Session* const> sessions, std::span<const std::span<const TokenId>> chunks, float* logits);

    const PlacedModel& placed_;
    int64_t max_rows_ = kMaxRows;
    bool host_only_ = true;
    LayerProgram program_;
    std::vector<LayerProgram::SequenceRows> rows_;
    std::vector<int32_t> output_rows_;
    std::vector<TokenId> row_tokens_;
    std::vector<int64_t> used_before_;  // each session's cache cells before the pass
    std::vector<std::span<const TokenId>> one_token_;  // decode()'s chunks
    std::vector<float> hidden_, logits_;
};

}  // namespace strata
