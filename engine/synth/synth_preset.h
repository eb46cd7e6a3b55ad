// Presets for synthetic models: the exact hyperparameters of real models (Llama 2/3, Qwen2/3,
// Gemma 3) and a few tiny ones for tests, as ModelConfigs plus a vocabulary style.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/synth/synth_vocab.h"

namespace strata {

struct SynthPreset {
    std::string_view name;         // "llama2-70b"
    std::string_view description;  // "Llama-2-70B: 80 layers, n_embd 8192, GQA 64/8"
    VocabStyle vocab;
    ModelConfig (*make_config)();  // the full model
};

// All presets, tiny ones first.
const std::vector<SynthPreset>& synth_presets();
// Throws ArgumentError naming the preset and listing the known ones.
const SynthPreset& find_synth_preset(std::string_view name);

// The preset's config with overrides: n_layer > 0 replaces the layer count (per-layer arrays
// and the sliding-window layout follow), n_vocab > 0 the vocabulary size. Throws
// ArgumentError for out-of-range overrides.
ModelConfig synth_config(const SynthPreset& preset, int64_t n_layer, int64_t n_vocab);

}  // namespace strata
