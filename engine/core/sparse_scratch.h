// The device scratch of the sparse FFN ops (Backend::sparse_gated_ffn and
// thresholded_gated_activation) on a GPU: one block, grown to the largest call and never shrunk.
// The CUDA backend holds it (kernels_cuda/backend_sparse.cpp) and the fake device holds the same
// bytes (backends/fake_device.cpp), so a budget without room for it fails on both alike.
#pragma once

#include <cstdint>

namespace strata {

// Neurons one block of the CUDA down kernel sums into one partial row of y.
constexpr int64_t kSparseDownChunk = 256;

// Byte offsets in the block, each 256-byte aligned: counts (u64 [evaluated, active], when the
// caller passes none), act (f32 [n_ff]: act(gate), then act·(up·x)), mask (u32 [n_ff/32]: bit i%32
// of word i/32 = neuron i active), partial (f32 [ceil(n_ff/chunk)][n_embd]: per-chunk sums of y).
struct SparseScratchLayout {
    uint64_t counts = 0, act = 0, mask = 0, partial = 0, total = 0;
};

inline SparseScratchLayout sparse_scratch_layout(int64_t n_ff, int64_t n_embd) {
    auto up = [](uint64_t b) { return (b + 255) / 256 * 256; };
    const auto ff = static_cast<uint64_t>(n_ff > 0 ? n_ff : 0);
    const auto embd = static_cast<uint64_t>(n_embd > 0 ? n_embd : 0);
    const uint64_t chunks = (ff + kSparseDownChunk - 1) / kSparseDownChunk;
    SparseScratchLayout l;
    l.counts = 0;
    l.act = up(2 * sizeof(uint64_t));
    l.mask = l.act + up(ff * sizeof(float));
    l.partial = l.mask + up((ff + 31) / 32 * sizeof(uint32_t));
    l.total = l.partial + up(chunks * embd * sizeof(float));
    return l;
}

}  // namespace strata
