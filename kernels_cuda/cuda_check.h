// CUDA_CHECK / CUBLAS_CHECK / CUDA_CHECK_LAUNCH: turn a failed CUDA or cuBLAS call into a
// strata::SystemError that names the call, the error string, and the file and line.
// Include only from kernels_cuda/.
#pragma once

#include <cublas_v2.h>
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

#define CUBLAS_CHECK(call)                                                                 \
    do {                                                                                   \
        const cublasStatus_t strata_cublas_st_ = (call);                                   \
        if (strata_cublas_st_ != CUBLAS_STATUS_SUCCESS) {                                  \
            throw ::strata::SystemError(::strata::cat(#call, " failed: ",                  \
                                                      cublasGetStatusString(strata_cublas_st_), \
                                                      " (", __FILE__, ":", __LINE__, ")"));  \
        }                                                                                  \
    } while (0)

// After a <<<...>>> launch: reports bad launch configurations at once (errors inside the kernel
// surface at the next synchronizing call).
#define CUDA_CHECK_LAUNCH(name)                                                                \
    do {                                                                                       \
        const cudaError_t strata_cuda_err_ = cudaGetLastError();                               \
        if (strata_cuda_err_ != cudaSuccess) {                                                 \
            throw ::strata::SystemError(::strata::cat("launch of ", name, " failed: ",         \
                                                      cudaGetErrorString(strata_cuda_err_),    \
                                                      " (", __FILE__, ":", __LINE__, ")"));    \
        }                                                                                      \
    } while (0)
