// The budgets a Runtime places a model within (runtime_budget.h).
#include "engine/runtime/runtime_budget.h"

#include <algorithm>

#include "engine/core/host_info.h"
#include "engine/runtime/batch_step.h"
#include "engine/runtime/session.h"

namespace strata {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
// Host RAM kept free when --ram-mem is not given.
constexpr uint64_t kRamMargin = 2 * kGiB;

}  // namespace

uint64_t largest_streamed_bytes(const TensorTable& table) {
    uint64_t largest = 0;
    for (const TensorEntry& t : table.tensors) {
        // Never streamed: the embedding and output matrices, and 1-D weights.
        const TensorRole role = t.role();
        if (role == TensorRole::TokenEmbd || role == TensorRole::Output || t.ne[1] == 1) continue;
        largest = std::max(largest, t.bytes);
    }
    return largest;
}

uint64_t gpu_scratch_estimate(const ModelConfig& c, int64_t n_batch, int64_t n_vocab, int64_t n_sequences,
                              uint64_t op_scratch_bytes) {
    int64_t width = c.n_embd;
    for (int il = 0; il < c.n_layer; ++il) {
        width = std::max({width, c.n_head[static_cast<size_t>(il)] * c.head_dim_k,
                          c.n_head[static_cast<size_t>(il)] * c.head_dim_v});
    }
    const int64_t n_ff = *std::max_element(c.n_ff.begin(), c.n_ff.end());
    // A mixture's prompt pass on the GPU also holds every (token, expert) output row, the
    // gathered input of an expert and the per-token sum (layer_program_moe.cpp).
    const int64_t moe_rows = c.moe.n_expert > 0 ? (c.moe.n_expert_used + 2) * c.n_embd : 0;
    const uint64_t per_token = static_cast<uint64_t>(10 * width + 3 * n_ff + moe_rows) * sizeof(float) +
                               static_cast<uint64_t>(std::max(width, n_ff)) * 4;  // q8 + f16 inputs
    const uint64_t activations = static_cast<uint64_t>(n_sequences) *
        (static_cast<uint64_t>(n_batch) * per_token + static_cast<uint64_t>(n_vocab) * 32 * sizeof(float));
    // Several sequences: the serve scheduler's batch step (batch_step.h) holds one decode row
    // per sequence (in groups of at most BatchStep::kMaxRows) and its logits rows.
    const uint64_t batch_rows = static_cast<uint64_t>(std::min(n_sequences, BatchStep::kMaxRows));
    const uint64_t batch = n_sequences > 1
        ? batch_rows * per_token + static_cast<uint64_t>(n_vocab) * std::min<uint64_t>(batch_rows, 32) * sizeof(float)
        : 0;
    return activations + batch + op_scratch_bytes;
}

uint64_t gpu_free_bytes(const Backend* gpu) { return gpu != nullptr ? gpu->memory().allocatable_bytes() : 0; }

KvTierBytes kv_tier_bytes(const Placement& placement, const TensorTable& table, int64_t kv_cells, GgmlType kv_type) {
    KvTierBytes bytes;
    for (int il = 0; il < table.n_layer; ++il) {
        const uint64_t b = kv_bytes_per_layer(table, il, kv_cells, kv_type);
        (placement.kv.at(static_cast<size_t>(il)) == Tier::Gpu ? bytes.gpu : bytes.ram) += b;
    }
    return bytes;
}

int64_t smallest_shipping_batch(const SessionParams& session, bool fixed) {
    const int64_t asked = session.gpu_prefill_min_tokens;
    return asked <= 0 || fixed ? std::max<int64_t>(asked, 0) : std::min(asked, kShipBreakEvenCandidates[0]);
}

RuntimeBudgets runtime_budgets(const ModelConfig& config, const TensorTable& table, const SessionParams& session,
                               int64_t n_vocab, const Backend* gpu, uint64_t ram_mem, int64_t ship_from) {
    RuntimeBudgets b;
    // GPU bytes free for the placement: the backend's memory now, less activations and scratch.
    b.gpu_free = gpu_free_bytes(gpu);
    b.activation_reserve = gpu != nullptr ? gpu_scratch_estimate(config, session.n_batch, n_vocab, session.n_sequences,
                                                                 gpu->capabilities().op_scratch_bytes)
                                          : 0;
    // Prompt batches ship host weights to the GPU one matrix at a time (layer_program.h). Room
    // for the largest layer matrix is kept out of the placement, else the placement fills the GPU
    // and prefill falls back to the CPU (70B at --gpu-mem 6G on an H100: pp512 7.8 tok/s without
    // the room, 103.8 with it). Kept from the smallest batch that may ship: the break-even is known
    // only once the weights are placed, and a batch of 48 ships 4.9x faster than the CPU computes
    // it (70B at 6 GiB on the H200: 63.1 against 12.9 tok/s).
    b.ships = gpu != nullptr && ship_from > 0 && session.n_batch >= ship_from;
    const uint64_t largest = b.ships ? largest_streamed_bytes(table) * static_cast<uint64_t>(session.n_sequences) : 0;
    // Two slots, so that one matrix crosses PCIe while the previous one is multiplied
    // (Backend::ship_in), else one. With slack for what the placement's sum leaves out
    // (allocation rounding, norm copies): a quarter of a matrix, at most 64 MiB (at 70B and
    // 6 GiB the room came out 3.75 MiB short of the largest matrix without it). Kept only where
    // it is at most a quarter of the budget.
    for (int slots = Backend::kShipSlots; slots >= 1 && b.staging_slots == 0; --slots) {
        const uint64_t staging = largest * static_cast<uint64_t>(slots);
        const uint64_t with_slack = staging + std::min<uint64_t>(largest / 4, 64ull << 20);
        if (largest > 0 && with_slack * 4 <= b.gpu_free) {
            b.staging_slots = slots;
            b.staging_reserve = with_slack;
        }
    }
    b.gpu_reserved = b.activation_reserve + b.staging_reserve;
    const uint64_t available = host_ram_available_bytes();
    b.ram = ram_mem > 0 ? ram_mem : (available > kRamMargin ? available - kRamMargin : 0);
    return b;
}

bool pins_ram_weights_by_default(bool ships, uint64_t ram_weight_bytes, uint64_t host_ram_bytes) {
    return ships && ram_weight_bytes > 0 && ram_weight_bytes <= host_ram_bytes / 2;
}

}  // namespace strata
