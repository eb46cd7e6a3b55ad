// Internal to kernels_cpu: the two products of a sparse FFN, over a list of weight rows.
//  - gather_matvec: y[j] = W[rows[j]] · x, one activation row x: the active rows of ffn_up
//    (or ffn_gate), through the same quantized-activation dot kernels as matmul (qdot.h), so
//    each y[j] is bit-identical to row rows[j] of the dense matmul (types without an integer
//    kernel take matmul's f32 path: the row dequantized and dotted in f32).
//  - accumulate_rows: y = Σ_j coef[j] · W[rows[j]], W neuron-major (row i = neuron i's column
//    of ffn_down): a scaled sum of dequantized rows. Q8_0 and Q4_0 rows have scalar, AVX2 and
//    AVX-512 kernels (the active kernel variant's); other types dequantize a row segment and add it.
// Both run on n_threads OpenMP threads; results do not depend on n_threads.
#pragma once

#include <cstdint>

#include "engine/core/tensor.h"
#include "kernels_cpu/kernel_variant.h"
#include "quant/ggml_type.h"
#include "quant/input_major.h"

namespace strata::cpu {

// w [k, n] (any dequantizable type, rows contiguous), x [k] f32, rows[0..n_rows) in [0, n).
// quantize_activations: as matmul's (false: the f32 path for every type). rows_ahead: how far
// ahead in the list each thread prefetches whole rows into L2 (1: only the next row's head into
// L1; sparse_rows_bench.cpp compares them: on a 2-core Xeon with rows from DRAM, 1 reads a
// random half of the rows at 9.3 GB/s, 4 and 8 at 8.3-8.4).
inline constexpr int kGatherRowsAhead = 1;
void gather_matvec(const Tensor& w, const float* x, const int32_t* rows, int64_t n_rows, float* y,
                   int n_threads, bool quantize_activations = true, int rows_ahead = kGatherRowsAhead);

// w [k, n], coef[n_rows], y [k] (overwritten). Rows are summed in groups sized by n_rows alone,
// each thread reading whole rows, and the groups' partial sums added in order.
void accumulate_rows(const Tensor& w, const float* coef, const int32_t* rows, int64_t n_rows, float* y,
                     int n_threads);

// y [w.n_out] = W·x through W's input-major copy (quant/input_major.h), reading only the
// columns of the nonzero x[j]: the masked FFN input (TEAL) or masked activations (CATS). The
// chunks are summed in groups fixed by the shape (each group's partial, then the partials in
// order), so the result does not depend on n_threads. ahead: how many bytes ahead in each
// active column the kernel prefetches into L2 (sparse_rows_bench.cpp compares values).
inline constexpr int64_t kInputMajorAhead = 256;
void input_major_matvec(const InputMajorQ4K& w, const float* x, float* y, int n_threads,
                        int64_t ahead = kInputMajorAhead);

// y[0 .. n_blocks·32) += Σ_j c[j] · dequantize(rows[j]) for j < n_rows (1..kAxpyRows): row
// segments of 32-element blocks, per kernel variant. Several rows per call so y is loaded and
// stored once per group of rows, not once per row (y is f32: four times the bytes of a Q8_0 row).
// next: the next call's n_rows rows, or null: as block i of this call's rows is read, block i of
// each next row is prefetched into L1, so the next group's rows arrive while this one is summed
// (scattered rows are too short for the hardware prefetcher to ramp up on: without this the
// kernel's arithmetic and its DRAM reads take turns).
inline constexpr int kAxpyRows = 4;
using AxpyFn = void (*)(const uint8_t* const* rows, const float* c, int n_rows, int64_t n_blocks, float* y,
                        const uint8_t* const* next);
// The kernel for rows of `type` (Q8_0, Q4_0: axpy_rows.cpp), or null (also where the CPU or
// build lacks the variant).
AxpyFn find_axpy(GgmlType type, KernelVariant v);

}  // namespace strata::cpu
