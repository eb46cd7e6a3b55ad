// The backends built into this binary, by name: cpu, cuda (when built with CUDA), fake. What
// --gpu resolves through; the runtime and the tools name no backend class.
#pragma once

#include "engine/core/backend_registry.h"

namespace strata {

// Made once, on first use (thread-safe).
const BackendRegistry& builtin_backends();

}  // namespace strata
