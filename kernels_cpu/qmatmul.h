// Internal to kernels_cpu: matmul on quantized weights with integer dot products. The
// activation rows are quantized once per call to the weight type's partner format, then the
// work is split into tiles of (W rows × activation rows) handed out to the OpenMP threads.
#pragma once

#include "engine/core/tensor.h"
#include "kernels_cpu/qdot.h"

namespace strata::cpu {

// y [n, m] = W [k, n] · x [k, m] through `kernel` (which must be the kernel of w.type).
// Arguments are checked by the caller (matmul.cpp). m = 1 is the decode GEMV; m > 1 the
// prefill GEMM, where each weight row is unpacked once per group of kQDotMaxCols rows of x.
// Results are bit-identical for any n_threads and do not depend on m (row i of y is the same
// whether x has 1 row or many).
void quantized_matmul(const Tensor& w, const Tensor& x, Tensor& y, int n_threads,
                      const QDotKernel& kernel);

}  // namespace strata::cpu
