// The CPU's sparse gated FFN of one token with a trained predictor (engine/runtime/sparse_ffn.h,
// --predictor): only the candidate neurons' gate rows are read; of those, neuron i is active when
// |act(gate_i·x)| > threshold, and only the active ones' rows of up and down_t are read (the
// kernels of sparse_rows.h). A neuron the predictor missed is skipped (the predictor's error); a
// false candidate costs one gate row. Host memory only; runs on n_threads OpenMP threads.
#pragma once

#include <cstdint>

#include "engine/core/backend.h"  // PredictedFfnArgs
#include "engine/core/tensor.h"

namespace strata::cpu {

// y [n_embd, 1] = Σ over the active candidates i: act(gate_i·x)·(up_i·x)·down_t_i. Returns the
// number of active neurons. ArgumentError: shapes, or candidates not ascending in [0, n_ff).
// quantize_activations: as matmul's (the gathered rows then equal the dense matmul's rows).
int64_t predicted_sparse_gated_ffn(const PredictedFfnArgs& args, Tensor& y, int n_threads,
                                   bool quantize_activations = true);

}  // namespace strata::cpu
