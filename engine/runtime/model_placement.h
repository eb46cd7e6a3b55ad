// The engine's side of placement: the tensor table and fingerprint offload/ sees a model
// through, and the built-in placement for a loaded model and its context.
#pragma once

#include <cstdint>

#include "offload/builtin_placement.h"
#include "offload/placement.h"

namespace strata {

class Model;

TensorTable tensor_table(const Model& model);
// Hashes the file's first bytes (offload/fingerprint.h): reads up to 16 MiB per shard.
ModelFingerprint model_fingerprint(const Model& model);

// check_placement against this model and its file; FormatError naming the problem.
void check_placement_for(const Placement& placement, const Model& model);

}  // namespace strata
