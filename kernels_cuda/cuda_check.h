// CUDA_CHECK / CUBLAS_CHECK: turn a failed CUDA call into a strata::SystemError that names
// the call, the error string, and the file and line. Include only from kernels_cuda/.
#pragma once

#include <cuda_runtime.h>

#include "engine/core/error.h"

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        const cudaError_t strata_cuda_err_ = (call);                                      \
        if (strata_cuda_err_ != cudaSuccess) {                                            \
            throw ::strata::SystemError(::strata::cat(#call, " failed: ",                 \
                                                      cudaGetErrorString(strata_cuda_err_), \
                                                      " (", __FILE__, ":", __LINE__, ")")); \
        }                                                                                 \
    } while (0)
