// The device op scratch a GPU backend reports (BackendCapabilities::op_scratch_bytes), shared
// by the CUDA backend and the fake device.
#pragma once

#include <cstdint>

namespace strata {

// Device bytes the CUDA backend's ops keep as scratch beyond the activations (the cuBLAS path's
// f16 weight tile, attention partials, argument buffers); the runtime reserves it before placing
// weights. The fake device reports the same, so a budget that holds on it holds on CUDA.
inline constexpr uint64_t kDeviceOpScratchBytes = 96ull << 20;

}  // namespace strata
