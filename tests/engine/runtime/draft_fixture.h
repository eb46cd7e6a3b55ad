// Test helper: tiny synthetic models for the draft-model tests, written by engine/synth.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tests/engine/synth/scratch_file.h"

namespace strata::testing {

// The "tiny" preset with n_layer layers (0: the preset's) and n_vocab tokens (0: the preset's).
std::unique_ptr<ScratchFile> tiny_model_file(const std::string& name, int64_t n_layer, int64_t n_vocab);

}  // namespace strata::testing
