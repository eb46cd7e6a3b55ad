// The FFN predictor file (`strata profile --predictor-out M.pred`): one line of JSON, the header,
// then the weights as little-endian f32. Header (version 1):
//   {"format": "strata-predictor", "version": 1,
//    "model": {"name", "file_bytes", "header_hash"}, "text": NAME, "n_tokens": N,
//    "sparsity": S, "target_recall": R, "data_bytes": B,
//    "layers": [{"n_embd", "n_ff", "rank", "threshold", "recall", "predicted_fraction",
//                "active_fraction", "offset"}, ...]}
// Layer l's weights start `offset` bytes after the header's newline: w1, b1, w2, b2
// (ffn_predictor.h), rank·n_embd + rank + n_ff·rank + n_ff floats; the data section has exactly
// data_bytes bytes, so a truncated file is refused. Readers refuse versions they do not know.
#pragma once

#include <string>
#include <string_view>

#include "predictor/ffn_predictor.h"

namespace strata {

inline constexpr int kPredictorFileVersion = 1;
inline constexpr const char* kPredictorFormat = "strata-predictor";

std::string predictors_to_bytes(const FfnPredictors& predictors);

// Strict: FormatError naming `what` (the file) for another format or version, a missing or
// mistyped field, shapes out of range, offsets outside the data, or a data section whose size
// is not data_bytes (truncated or padded).
FfnPredictors predictors_from_bytes(std::string_view bytes, const std::string& what);

}  // namespace strata
