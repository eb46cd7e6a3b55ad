// The metadata of a synthetic model: general.*, the architecture's hyperparameter keys
// written from its ModelConfig (the inverse of ModelConfig::from_file), and tokenizer.*.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_value.h"
#include "engine/synth/synth_model.h"

namespace strata {

using Metadata = std::vector<std::pair<std::string, GgufValue>>;

// Keys in the order they are written.
Metadata synth_metadata(const SynthPlan& plan, const SynthOptions& options);

}  // namespace strata
