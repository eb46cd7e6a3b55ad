// Internal to the layer program: the host-side state of its mixture-of-experts step
// (layer_program_moe.cpp) and a walk over a layer's MoE weights in program order.
#pragma once

#include <vector>

#include "engine/core/backend.h"
#include "engine/runtime/moe_routing.h"
#include "engine/runtime/placed_model.h"

namespace strata {

struct MoeScratch {
    MoeRouting routing;
    // The normed input [n_embd, n] then the router logits [n_expert, n], when the router is on
    // a device.
    std::vector<float> head;
    std::vector<float> sum;      // the weighted sum [n_embd, n], when the home is a device
    std::vector<float> rows;     // an expert's gathered input rows
    std::vector<float> out;      // an expert's output rows, when it ran on a device
    std::vector<float> shared_scale;  // [n] sigmoid gate of the shared expert
    std::vector<ExpertRef> fused;     // decode: the host experts run as one expert_ffn
    std::vector<ExpertRef> device;    // decode: the device's experts, one expert_ffn there
    std::vector<float> zeros;         // [n_embd]: the device sum's start
    // Prompt pass on the GPU (LayerProgram::queue_device_expert): an expert's token ids, each
    // slot's output row on the device (-1: computed on the host), and the per-token sum of the
    // device rows (combine_rows's offsets, rows and weights).
    std::vector<int32_t> ids;
    std::vector<int32_t> device_row;
    std::vector<int32_t> combine_offsets;
    std::vector<int32_t> combine_rows;
    std::vector<float> combine_weights;
};

// fn(const PlacedWeight&) for every present weight of `moe`, in the order the MoE step reads
// them (the DISK schedule's order).
template <typename Fn>
void for_each_moe_weight(const PlacedMoe& moe, Fn&& fn) {
    for (const PlacedWeight* w : {&moe.router, &moe.shared_gate, &moe.shared.gate, &moe.shared.up, &moe.shared.down})
        if (w->present()) fn(*w);
    for (const ExpertWeights& e : moe.experts) {
        fn(e.gate);
        fn(e.up);
        fn(e.down);
    }
}

}  // namespace strata
