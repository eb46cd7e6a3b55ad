// Random tensor rows for synthetic models, written directly in their on-disk format. Quantized
// types get valid blocks with uniformly random quants and scales chosen so the dequantized
// values have mean ~0 and the requested standard deviation; this runs at several GB/s, where
// quantizing float weights with the reference quantizers would take hours for a 70B model.
// Plain types (F32, F16, BF16) are drawn from a normal distribution.
//
// Row r of a tensor depends only on (seed, r): any split of the rows, any thread count, gives
// the same bytes. Thread-safe (no shared state).
#pragma once

#include <cstdint>

#include "quant/ggml_type.h"

namespace strata {

struct WeightDist {
    float mean = 0.0f;  // must be 0 for quantized types
    float std = 0.02f;
};

// True for the types fill_rows can write: F32, F16, BF16, Q8_0, Q5_0, Q4_K, Q5_K, Q6_K, the
// lattice i-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and TQ1_0 / TQ2_0.
bool can_fill(GgmlType type);

// Writes rows [row0, row0 + n_rows) of a tensor with rows of `ne0` elements into `out`
// (n_rows * row_bytes(type, ne0) bytes). Throws UnsupportedError for other types and
// ArgumentError for a nonzero mean with a quantized type.
void fill_rows(GgmlType type, WeightDist dist, uint64_t seed, int64_t row0, int64_t n_rows,
               int64_t ne0, uint8_t* out);

}  // namespace strata
