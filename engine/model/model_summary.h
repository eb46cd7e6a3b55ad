// Totals over a model's tensor table for reports (strata inspect, the planner's logs):
// parameter count, bytes, and the mix of tensor types.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/tensor_info.h"
#include "engine/model/model_config.h"
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

// A mixture-of-experts model's experts, for reports: what one expert of a layer costs and what
// a token reads (the router's n_expert_used experts of every layer, plus everything else).
struct ExpertSummary {
    int64_t n_expert = 0;          // per layer
    int64_t n_expert_used = 0;     // per token
    uint64_t bytes_per_expert = 0;  // gate + up + down of one expert of one layer (mean over layers)
    uint64_t expert_bytes = 0;      // every layer's ffn_{gate,up,down}_exps
    uint64_t total_bytes = 0;       // every tensor
    uint64_t active_bytes = 0;      // bytes a token reads: all but the unused experts
    int64_t active_params = 0;      // parameters a token uses
};

// Zeros for a dense model. `config` must have been read from `tensors`' file.
ExpertSummary summarize_experts(const std::vector<TensorInfo>& tensors, const ModelConfig& config);

}  // namespace strata
