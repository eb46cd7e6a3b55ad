// Small enums shared by model configurations and backends: how RoPE pairs dimensions and
// which gated activation an FFN uses (docs/FORMATS.md §3.1).
#pragma once

#include <cstdint>

namespace strata {

// RoPE pairing: Norm rotates adjacent pairs (x[2i], x[2i+1]) (arch llama); Neox rotates
// (x[i], x[i + n_rot/2]) (qwen2, qwen3, gemma3).
enum class RopeStyle : uint8_t { Norm, Neox };

enum class Activation : uint8_t { Silu, GeluTanh };

}  // namespace strata
