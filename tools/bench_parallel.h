// strata bench's parallel rows (-np N, llama-batched-bench's -npl): N sequences decode at once,
// one forward pass per step for all of them (BatchStep, as `strata serve` batches its slots),
// and the row reports their aggregate tokens/s. Each sequence starts from its own random
// one-token prompt after `depth` random tokens (untimed), so every row attends to its own cache.
#pragma once

#include <cstdint>
#include <random>
#include <span>

#include "engine/runtime/batch_step.h"
#include "engine/runtime/session.h"

namespace strata::cli {

// Aggregate decode tokens/s of n steps over `sessions` (cleared first) through `step`:
// sessions.size() * n tokens over the time of the n steps.
double parallel_once(BatchStep& step, std::span<Session* const> sessions, int64_t n, int64_t depth, std::mt19937& rng);

}  // namespace strata::cli
