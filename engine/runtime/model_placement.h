// The engine's side of placement: the tensor table and fingerprint offload/ sees a model
// through, and the built-in placement for a loaded model and its context.
#pragma once

#include <cstdint>

#include "offload/builtin_placement.h"
#include "offload/placement.h"

namespace strata {

class Model;

// KvCache::kDefaultMaxBatch: the ring room of a cache made without a batch size.
inline constexpr int64_t kDefaultKvRingSlack = 512;

// The model as the planner sees it. Sliding-window layers' KV is counted as the rings a
// session keeps (kv_cache.h): window + kv_ring_slack cells (the session's n_batch) for each of
// kv_sequences sequences.
TensorTable tensor_table(const Model& model, int64_t kv_ring_slack = kDefaultKvRingSlack, int64_t kv_sequences = 1);
// Hashes the file's first bytes (offload/fingerprint.h): reads up to 16 MiB per shard.
ModelFingerprint model_fingerprint(const Model& model);

// check_placement against this model and its file; FormatError naming the problem.
void check_placement_for(const Placement& placement, const Model& model);

}  // namespace strata
