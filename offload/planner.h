// The planner: the placement the cost model (cost_model.h) predicts fastest within the GPU and
// RAM budgets, for `strata plan`. It never returns a plan the cost model rates slower than the
// best llama.cpp-style whole-layer split (first k layers on the GPU) or the built-in placement.
#pragma once

#include <string>
#include <vector>

#include "offload/cost_model.h"
#include "offload/hardware_profile.h"
#include "offload/placement.h"
#include "offload/placement_rules.h"

namespace strata {

struct PlannerParams {
    Budgets budgets;
    int64_t n_ctx = 0;  // KV cells the budgets must hold
    GgmlType kv_type = GgmlType::F16;
    uint64_t gpu_reserved_bytes = 0;  // of budgets.gpu_bytes: activations, workspace, cuBLAS
    uint64_t ram_reserved_bytes = 0;  // of budgets.ram_bytes: disk staging, activations
    CostParams cost;
    // The objective is decode s/token + prefill_weight × prefill s/token (0: decode only).
    double prefill_weight = 0;
    // Per layer, per neuron activation frequencies. Not used yet: the executor computes every
    // neuron of a split FFN, so a GPU share does exactly its byte share of the work. With a
    // sparse FFN (predictor/), neurons ordered hot-first would let a GPU share of the bytes
    // cover the larger share of the work that its heat sums to.
    const std::vector<std::vector<float>>* ffn_neuron_heat = nullptr;
    // -ngl / -ot: what the rules put on the GPU starts there; no move puts on the GPU what they
    // keep off it (weights, or the KV of layers past -ngl). Every candidate below obeys them.
    PlacementRules rules;
    // No FFN split between the GPU and RAM by neuron range (BuiltinPlacementParams::whole_ffns).
    bool whole_ffns = false;
};

// How the plan was chosen, for `strata plan` to print.
struct PlanReport {
    std::string chosen;  // "greedy", "whole layers" or "built-in"
    CostEstimate estimate;
    CostEstimate greedy;
    CostEstimate whole_layers;  // the best first-k-layers split
    int whole_layers_k = 0;     // its k (n_layer + 1: every layer and the output matrix)
    CostEstimate builtin;       // zero when the built-in placement is not runnable here
};

// A placement that passes check_placement (with the caller's fingerprint filled in), keeps
// GPU weights + GPU KV <= gpu_bytes - gpu_reserved_bytes and RAM weights + RAM KV <=
// ram_bytes - ram_reserved_bytes, and that the executor runs: a layer's unsplit FFN on one
// processor, split FFNs with no DISK neurons, the embedding and output matrices, norms and
// biases never on DISK, a layer's KV on GPU or RAM.
//
// Search: (1) what must stay in memory goes to RAM (to the GPU where RAM is short), other
// tensors to RAM in file order while they fit, else DISK; (2) repeatedly the move to the GPU
// with the most predicted seconds saved per GPU byte: a layer's KV, its attention weights, both
// together, its FFN's first neurons up to 1/8, 2/8 ... of n_ff or as many as fit (a split with
// the rest in RAM), other matrices, the output matrix — after each, freed RAM takes DISK
// tensors back. Step (2) runs four times: ranked by seconds saved per byte or by seconds saved,
// with FFN shares of k/8 or whole FFNs only (per-byte ranking alone packs few large items
// badly); (3) the same budgets filled by whole layers 0..k-1 for every k, and the built-in
// placement; the cost model's best of all is returned. While must-stay items overflow RAM,
// the moves that free most RAM per GPU byte come first. predicted, budgets,
// n_ctx, kv_type and hardware are filled; model (the fingerprint) is left to the caller.
//
// BudgetError naming the bytes needed when what must stay in memory does not fit the budgets,
// or gpu_bytes is non-zero but below gpu_reserved_bytes, or the tensors the rules put on the GPU
// exceed it. ArgumentError on bad rules, on n_ctx <= 0, a
// profile without host_read_gbs, or a GPU budget with a profile that has no GPU rates.
Placement plan_placement(const TensorTable& table, const HardwareProfile& profile,
                         const PlannerParams& params, PlanReport* report = nullptr);

}  // namespace strata
