// Quantizers for the neuron-major ffn_down copy (sparse_ffn.h). That copy re-quantizes weights
// that were quantized once already, so its error adds to theirs; a 4-bit copy is worth having
// only if that added error is small. Q4_0 here keeps ggml's block layout (18 bytes per 32
// weights: f16 d, 32 nibbles q with w = d·(q - 8)) but picks d per block to minimise the
// squared error instead of ggml's d = max/-8 (docs/SPARSITY.md measures both).
#pragma once

#include <cstdint>

namespace strata {

// dst: n / 32 Q4_0 blocks of src[0..n) (n a multiple of 32). Per block, candidate scales map
// the largest-magnitude value to -8 or 7 with a little slack each way; for each the quants are
// rounded and d refitted by least squares (Σ x·q / Σ q²); the candidate with the least squared
// error after d is rounded to f16 wins.
void quantize_q4_0_mse(const float* src, void* dst, int64_t n);

}  // namespace strata
