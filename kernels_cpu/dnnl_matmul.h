// Internal to kernels_cpu: the oneDNN path of matmul for prefill-sized batches. W stays
// quantized in memory; each call dequantizes it in row tiles to bf16 and runs a oneDNN matmul
// (bf16 x bf16 -> f32, AMX on Sapphire Rapids and later) per tile (one tile for W up to
// 64 MiB in bf16). Compiled in only when
// oneDNN was found at build time (STRATA_HAVE_DNNL); otherwise use_dnnl_matmul is false.
#pragma once

#include <cstdint>

#include "engine/core/tensor.h"

namespace strata::cpu {

// When matmul takes the oneDNN path (CpuBackendOptions documents the measured choice).
struct DnnlPolicy {
    int64_t min_rows = 0;     // activation rows m from which oneDNN runs; 0 = never
    bool require_amx = true;  // false also runs it without AMX-BF16 (tests, benchmarks)
};

// True if oneDNN is compiled in, not disabled by the environment (STRATA_DNNL=0), and can
// build a bf16 matmul on this CPU (it needs AVX-512 at least). Checked once; any thread.
bool dnnl_matmul_available();

// Whether a matmul of W of `type` by m activation rows takes the oneDNN path: available,
// W block-quantized (f32/f16/bf16 weights keep their exact f32 path), policy.min_rows > 0,
// m >= policy.min_rows, and the CPU has AMX-BF16 unless policy.require_amx is false.
bool use_dnnl_matmul(GgmlType type, int64_t m, const DnnlPolicy& policy);

// y [n, m] = W [k, n] · x [k, m], with W and x rounded to bf16 (products and sums in f32:
// NMSE against the exact product ~1e-5 on random inputs). Arguments as checked by matmul;
// y's rows must be equally strided (callers check y_rows_uniform). Runs on n_threads OpenMP
// threads. A row's result depends on m and on oneDNN's blocking, not only on that row.
// Safe to call from several threads at once; each calling thread keeps its scratch (bf16 x,
// one bf16 W tile of <= 64 MiB, an f32 y tile when y is strided or W takes several tiles)
// for the next call. tile_rows > 0 overrides the W rows per tile (tests). Throws
// UnsupportedError where the path is not available.
void dnnl_matmul(const Tensor& w, const Tensor& x, Tensor& y, int n_threads, int64_t tile_rows = 0);

// y's rows sit at one stride (a 2-D view, or dims 2 and 3 packed behind dim 1).
bool y_rows_uniform(const Tensor& y);

}  // namespace strata::cpu
