// Internal to engine/model: reading a mixture-of-experts model's keys into ModelConfig::moe and
// checking its expert tensors with messages that name the tensor and the expert counts.
#pragma once

#include <cstdint>

namespace strata {

class KeyReader;
class ModelFile;
struct ArchSpec;
struct ModelConfig;

// Most experts a layer may have (llama.cpp's LLAMA_MAX_EXPERTS is 512 as of 2025).
inline constexpr int64_t kMaxExperts = 512;

// Reads <arch>.expert_count, expert_used_count, expert_feed_forward_length,
// expert_shared_feed_forward_length, expert_weights_norm and expert_weights_scale into c.moe.
// An architecture without experts given expert_count > 0 is UnsupportedError naming the ones
// that have them; a MoE architecture without expert_count, or expert_used_count outside
// 1..expert_count, is FormatError naming the key and the values.
void read_moe_keys(const KeyReader& keys, const ArchSpec& spec, ModelConfig& c);

// For a MoE config: every block's router present and scoring n_expert experts, every expert
// tensor 3-D holding n_expert matrices; the old one-tensor-per-expert layout
// ("blk.N.ffn_gate.E.weight") is UnsupportedError. Shapes beyond these are validate_tensors'.
void check_expert_tensors(const ModelFile& file, const ModelConfig& c);

}  // namespace strata
