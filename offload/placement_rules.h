// Placement rules given on the command line, as llama.cpp spells them: -ngl N (at most the first
// N layers on the GPU) and -ot REGEX=DEVICE (tensors whose names match go to the GPU or stay off
// it). Both placers (planner.h, builtin_placement.h) take them as inputs and place everything the
// rules leave open as they would without them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "offload/placement.h"

namespace strata {

struct TensorRule {
    std::string pattern;  // ECMAScript regular expression, searched for in the tensor name
    bool on_gpu = false;  // true: on the GPU; false: off it (RAM, or DISK where RAM is short)
};

struct PlacementRules {
    // -1: no limit. Else only layers [0, gpu_layers) may hold weights or KV on the GPU, and the
    // global tensors (output matrix, final norm, embeddings) only when gpu_layers > n_layer
    // (llama.cpp counts the output as layer n_layer).
    int gpu_layers = -1;
    std::vector<TensorRule> tensors;  // the first rule whose pattern matches wins over gpu_layers

    bool empty() const { return gpu_layers < 0 && tensors.empty(); }
};

enum class Pin : uint8_t { Free, Gpu, OffGpu };

// The rules applied to one model. A layer's three FFN tensors share one tier, so a rule that
// matches one of them pins all three.
struct ResolvedRules {
    std::vector<Pin> tensor;      // per tensor of the table
    std::vector<bool> kv_gpu_ok;  // per layer: may its KV cache be on the GPU

    bool gpu_ok(size_t i) const { return tensor.empty() || tensor[i] != Pin::OffGpu; }
    bool on_gpu(size_t i) const { return !tensor.empty() && tensor[i] == Pin::Gpu; }
    bool kv_ok(int layer) const { return kv_gpu_ok.empty() || kv_gpu_ok[static_cast<size_t>(layer)]; }
};

// ArgumentError on an invalid pattern (naming it) or rules that put one layer's FFN tensors
// both on and off the GPU (naming the tensors).
ResolvedRules resolve_rules(const TensorTable& table, const PlacementRules& rules);

// "REGEX=DEVICE[,REGEX=DEVICE...]" (-ot): DEVICE is CPU (off the GPU) or GPU, CUDA, CUDA0 ...
// (case-insensitive). ArgumentError naming the text and the devices accepted.
std::vector<TensorRule> parse_tensor_rules(std::string_view text);

// Bytes of the tensors the rules put on the GPU (FFN triples whole).
uint64_t pinned_gpu_bytes(const TensorTable& table, const ResolvedRules& rules);

}  // namespace strata
