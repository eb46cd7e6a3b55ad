// Internal to the .cu files: the FFN's gate activations on the device (the gated activation of
// elementwise.cu and the sparse FFN's mask of sparse_ffn.cu compute them alike).
#pragma once

#include <cuda_runtime.h>

#include "engine/core/op_types.h"

namespace strata::cuda {

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

__device__ __forceinline__ float gelu_tanh(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    constexpr float kCoef = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * x * (1.0f + kCoef * x * x)));
}

// act is Silu or GeluTanh (the callers check).
__device__ __forceinline__ float gate_activation(Activation act, float x) {
    return act == Activation::Silu ? silu(x) : gelu_tanh(x);
}

}  // namespace strata::cuda
