// Totals over a model's tensor table for reports (strata inspect, the planner's logs):
// parameter count, bytes, and the mix of tensor types.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/tensor_info.h"
#include "quant/ggml_type.h"

namespace strata {

struct TypeUsage {
    GgmlType type = GgmlType::F32;
    int64_t n_tensors = 0;
    int64_t n_elements = 0;
    uint64_t n_bytes = 0;
};

struct ModelSummary {
    int64_t n_tensors = 0;
    int64_t n_params = 0;            // elements of all tensors
    uint64_t n_bytes = 0;            // tensor data, without padding
    std::vector<TypeUsage> by_type;  // largest byte count first
    double bits_per_weight() const {
        return n_params > 0 ? 8.0 * static_cast<double>(n_bytes) / static_cast<double>(n_params)
                            : 0.0;
    }
};

ModelSummary summarize_tensors(const std::vector<TensorInfo>& tensors);

}  // namespace strata
