// The built-in placement: a deterministic plan from byte budgets alone, used when no planner
// (cost model) or placement file is given. It favours what every token reads most per byte.
#pragma once

#include <cstdint>
#include <vector>

#include "offload/placement.h"
#include "offload/placement_rules.h"

namespace strata {

struct BuiltinPlacementParams {
    Budgets budgets;
    int64_t n_ctx = 0;  // KV cells
    GgmlType kv_type = GgmlType::F16;
    // K+V bytes per layer (one entry per layer); empty: kv_bytes_per_layer() from the table.
    std::vector<uint64_t> kv_bytes;
    uint64_t gpu_reserved_bytes = 0;  // of budgets.gpu_bytes: activations, workspace, cuBLAS
    uint64_t ram_reserved_bytes = 0;  // of budgets.ram_bytes: disk staging, activations
    // -ngl / -ot: tensors the rules put on the GPU go there first; those they keep off it (and
    // the KV of layers past -ngl) are skipped by the GPU order below without closing it.
    PlacementRules rules;
    // No FFN split between the GPU and RAM by neuron range: a layer's FFN goes to the GPU whole
    // or not at all (--sparsity without --hot-neurons runs each FFN on one backend).
    bool whole_ffns = false;
};

// Fills the GPU budget (less gpu_reserved_bytes) in this order:
//   1. small tensors (ne[1] == 1: norms, biases, rope_freqs), in file order;
//   2. per layer from 0: its KV cache, then its attn_* tensors;
//   3. the output tensor (output.weight; token_embd when the output is tied to it);
//   4. other global tensors; 5. every layer's other tensors (MoE routers, shared experts);
//   6. per layer from 0: its 3-D expert tensors (MoE), then its FFN neurons in granules
//      (FfnTensors::granule) — the layer where the GPU runs out gets an FfnSplit;
//   7. token_embd (untied), which only get_rows reads, when everything else is on the GPU.
// The GPU takes items in this order until the first that does not fit; the rest go to RAM, so
// all attention is on the GPU before any FFN neuron is. Whatever must stay in memory (small
// tensors, token_embd, the output matrix, the KV cache; the executor streams neither matrix)
// then goes to RAM, and the other tensors follow in file order,
// each to RAM while it fits and else to DISK. A layer's FFN goes to DISK only whole (a neuron
// range of ffn_down is not one byte range of the file, so it cannot be streamed): the neurons a
// layer has off the GPU all go to RAM, or — when they do not fit — the whole FFN goes to DISK
// (its GPU share then stays unused).
// GPU placements also keep enough room in GPU+RAM for what must stay in memory; such an item
// may use the GPU's leftover when RAM is full. budgets.gpu_bytes == 0: nothing on the GPU.
//
// BudgetError, with the bytes needed, when the must-stay-in-memory part and the reserves do not
// fit the budgets, or budgets.gpu_bytes is non-zero but below gpu_reserved_bytes.
// ArgumentError on n_ctx <= 0, kv_bytes of the wrong length, or bad rules (placement_rules.h);
// BudgetError when the tensors the rules put on the GPU do not fit it.
// The result's model, hardware and predicted fields are left for the caller to fill.
Placement builtin_placement(const TensorTable& table, const BuiltinPlacementParams& params);

// What the GPU reserves of budgets `b` (gpu_reserved_bytes, 0 without a GPU budget); BudgetError
// when a GPU budget is below it. Shared with the planner.
uint64_t checked_gpu_reserve(const Budgets& b, uint64_t gpu_reserved_bytes);

}  // namespace strata
