// The planner's placement of a tiny MoE model for placed_moe_test.cpp.
#pragma once

#include "offload/placement.h"

namespace strata::test {

// plan_placement on a made-up machine where copies are free (so GPU experts pay), with
// n_ctx = 64 and the given budgets.
Placement plan_moe_for_test(const TensorTable& table, const Budgets& budgets);

}  // namespace strata::test
