// A target model and its draft (speculative decoding, issue 25) loaded through one set of
// budgets. The draft is loaded first and placed on the GPU first: it gets a GPU share of its
// footprint (weights, a KV cache of the target's context, activations and a margin), at most
// half an explicit --gpu-mem; the target is then placed in what is left. An explicit --ram-mem
// is split the same way after the draft is placed: the target gets the budget less the RAM the
// draft holds (weights, KV, disk staging). Without --gpu-mem the target takes the free VRAM
// after the draft's allocation; without --ram-mem both take the available RAM.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/runtime/runtime.h"

namespace strata {

struct DraftLoad {
    std::string path;     // -md FILE
    int gpu_layers = -1;  // -ngld: the draft's layers on the GPU; -1 = no limit
};

// GPU bytes the draft asks for: its weights, KV of n_ctx cells, activations of a batch, and a
// fixed margin for the backend's own scratch (cuBLAS, rounding).
uint64_t draft_gpu_need(const Model& draft, const SessionParams& session);

// The draft's share of an explicit GPU budget (0: none given): its need, at most half of it.
// Throws BudgetError when the budget is given and the half cannot hold 256 MiB.
uint64_t draft_gpu_share(uint64_t gpu_mem, uint64_t need);

struct LoadedPair {
    std::unique_ptr<Runtime> draft;
    std::unique_ptr<Runtime> target;
};

// Checks the draft's vocabulary against the target's (check_draft_vocabulary) before any weight
// is read, loads the draft, then the target in what is left of `options`' budgets.
LoadedPair load_target_and_draft(const std::string& target_path, const RuntimeOptions& options, const DraftLoad& draft);

// RAM the runtime's placement holds: RAM weights, disk staging and the RAM part of its KV cache
// of `n_ctx` cells (n_sequences sessions).
uint64_t runtime_ram_bytes(const Runtime& runtime);

}  // namespace strata
