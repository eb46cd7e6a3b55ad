// How activation sparsity (--sparsity) reads a layer's ffn_down in decode. Neuron i of ffn_down
// is a strided column in GGUF, so skipping it needs a neuron-major copy, re-quantized (Q8_0 by
// default: the 0.1% perplexity bound of docs/SPARSITY.md). The copy is read at the active
// fraction but at its own bits per weight, and its row accumulate runs slower per byte than a
// dense GEMV; ffn_down read whole (a plain matmul of the masked activations) needs no copy, no
// RAM for one and no re-quantization. Auto keeps a copy only where it reads less time than the
// whole matrix: a Q8_0 copy of a Q6_K/Q8_0/F16 down at S = 0.5, not of a Q4_K one.
#pragma once

#include <cstdint>

#include "quant/ggml_type.h"

namespace strata {

enum class SparseDownMode { Auto, Copy, Whole };

struct SparseDownPolicy {
    SparseDownMode mode = SparseDownMode::Auto;
    GgmlType copy_type = GgmlType::Q8_0;  // the neuron-major copy's type (Auto and Copy)
};

// A copy of type t in every layer (the Copy mode).
inline SparseDownPolicy copy_every_layer(GgmlType t) { return {SparseDownMode::Copy, t}; }

// The share of the hardware profile's GEMV rate for the type (cpu_gemv_gbs, what the cost model
// prices dense reads at) that the sparse row kernels keep on a random half of the rows. Measured
// on the GPU machine's 16 host threads (7B and 70B shapes' op times, docs/BENCHMARKS.md,
// eighteenth session): the gathered Q4_K up rows 53-70 GB/s against the profile's 119 for q4_K
// (0.45-0.59), the q8_0 copy's accumulate 67-95 against 128 for q8_0 (0.52-0.74). The
// constants are the upper ends.
inline constexpr double kAccumulateRateShare = 0.75;
inline constexpr double kGatherRateShare = 0.6;

// The share a row kernel keeps when it reads a fraction `active` of the rows: all of them read in
// order run at the GEMV's rate (1), and from half of them down the reads are as random as they
// get (`base`); linear between.
double row_rate_share(double base, double active);

// Whether a copy of copy_bpw bytes per weight, read at the active fraction by the accumulate,
// takes less time than a source of source_bpw bytes per weight read whole (the Auto rule).
bool neuron_major_copy_pays(double copy_bpw, double source_bpw, double active);

// Whether a layer whose ffn_down has type `source` keeps a neuron-major copy under `policy`
// when a fraction `active` of its neurons is read per token.
bool keeps_neuron_major_copy(const SparseDownPolicy& policy, GgmlType source, double active);

// Whether --input-major keeps an exact input-major copy (quant/input_major.h) of a matrix of this
// type with n_in inputs and n_out outputs: Q4_K, whose sub-blocks a skipped input cannot skip in
// GGUF's layout, at a shape the copy fits. Its bytes: input_major_q4k_bytes.
bool keeps_input_major(GgmlType type, int64_t n_in, int64_t n_out);

}  // namespace strata
