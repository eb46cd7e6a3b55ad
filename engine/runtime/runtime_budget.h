// The budgets a Runtime places a model within: the GPU bytes free for weights and KV after the
// activations, op scratch and prefill staging are set aside, and the RAM for weights and staging.
#pragma once

#include <cstdint>

#include "engine/core/backend.h"
#include "engine/model/model_config.h"
#include "offload/placement.h"

namespace strata {

struct SessionParams;

// The largest tensor that may be streamed from disk (the staging ring holds two of them, so
// one is read while the other is used: disk_stream_options).
uint64_t largest_streamed_bytes(const TensorTable& table);

// Device bytes for activations and backend scratch at batch n_batch: the executor's slots
// (layer_program.h) of each of n_sequences sessions, the GEMV's quantized input and the f16
// input of batched matmuls, and what the backend's ops keep beyond them (op_scratch_bytes).
uint64_t gpu_scratch_estimate(const ModelConfig& c, int64_t n_batch, int64_t n_vocab, int64_t n_sequences,
                              uint64_t op_scratch_bytes);

// Bytes the GPU backend can still allocate (0 without one).
uint64_t gpu_free_bytes(const Backend* gpu);

// KV cache bytes of kv_cells cells per layer, by the placement's tier of each layer's cache.
struct KvTierBytes {
    uint64_t gpu = 0;
    uint64_t ram = 0;
};
KvTierBytes kv_tier_bytes(const Placement& placement, const TensorTable& table, int64_t kv_cells, GgmlType kv_type);

struct RuntimeBudgets {
    uint64_t gpu_free = 0;            // what the GPU backend could allocate before the placement
    uint64_t activation_reserve = 0;  // gpu_scratch_estimate
    bool ships = false;               // prompt batches ship host weights to the GPU
    int staging_slots = 0;            // largest matrices the shipping room holds (0, 1 or 2)
    uint64_t staging_reserve = 0;     // that room, with slack
    uint64_t gpu_reserved = 0;        // activation reserve + staging reserve
    uint64_t ram = 0;                 // --ram-mem, else available RAM less a margin
};

// The prompt batches from which the runtime may lower SessionParams::gpu_prefill_min_tokens
// (Runtime::set_ship_break_even), smallest first.
inline constexpr int64_t kShipBreakEvenCandidates[] = {2, 3, 4, 6, 8, 12, 16, 24, 32, 48};

// The smallest prompt batch that may ship host weights to the GPU: the session's threshold when
// the user fixed it (--ship-min-batch), else the smallest break-even candidate below it; 0: none.
int64_t smallest_shipping_batch(const SessionParams& session, bool fixed);

// The budgets for `table` with these session params on `gpu` (null: none), vocabulary n_vocab.
// ram_mem: --ram-mem (0: available RAM less a margin). ship_from: smallest_shipping_batch; the
// shipping room is kept when the session's batch reaches it.
RuntimeBudgets runtime_budgets(const ModelConfig& config, const TensorTable& table, const SessionParams& session,
                               int64_t n_vocab, const Backend* gpu, uint64_t ram_mem, int64_t ship_from);

// Whether the RAM weights are registered with the GPU (pinned) when the user said neither
// --pin-weights nor --no-pin-weights: when prompt batches ship them, there are some, and they
// take at most half the host's RAM, so pinning them leaves the rest of the system room.
// Pinned pages cannot be reclaimed under memory pressure, unlike the file mapping's.
bool pins_ram_weights_by_default(bool ships, uint64_t ram_weight_bytes, uint64_t host_ram_bytes);

}  // namespace strata
