// Internal to kernels_cpu: the CPU body of every Backend op, one family per file. Each checks
// its arguments (ArgumentError / UnsupportedError with the shapes) and runs on n_threads
// OpenMP threads; results never depend on n_threads. See engine/core/backend.h for the
// shapes and aliasing rules; cpu_backend.cpp only forwards here.
#pragma once

#include <cstdint>

#include "engine/core/backend.h"
#include "engine/core/tensor.h"

namespace strata::cpu {

// matmul.cpp (the fields: see CpuBackendOptions). The defaults keep oneDNN off, so a bare
// cpu::matmul always runs Strata's own kernels.
struct MatmulOptions {
    bool quantize_activations = true;
    int64_t dnnl_min_rows = 0;
    bool dnnl_require_amx = true;
};
void matmul(const Tensor& w, const Tensor& x, Tensor& y, int n_threads,
            const MatmulOptions& options);
inline void matmul(const Tensor& w, const Tensor& x, Tensor& y, int n_threads,
                   bool quantize_activations = true) {
    matmul(w, x, y, n_threads, MatmulOptions{.quantize_activations = quantize_activations});
}

// get_rows.cpp
void get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out, int n_threads);

// norm.cpp
void rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y, int n_threads);

// elementwise.cpp
void add(const Tensor& a, const Tensor& b, Tensor& y, int n_threads);
void scale(Tensor& x, float s, int n_threads);
void combine_rows(const Tensor& x, const RowCombine& c, Tensor& y, int n_threads);
void softcap(Tensor& x, float cap, int n_threads);
void gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y,
                      int n_threads);

// sparse_ffn.cpp
int64_t thresholded_gated_activation(const Tensor& gate, const Tensor& up, Activation act, float threshold,
                                     Tensor& y, int n_threads);
int64_t sparse_gated_ffn(const SparseFfnArgs& args, Tensor& y, int n_threads, bool quantize_activations = true);
// x[i] = 0 where |x[i]| <= threshold (x f32, contiguous rows); returns how many were kept.
int64_t mask_small_values(Tensor& x, float threshold, int n_threads);
// y [w.n_out, 1] = W·x over the nonzero x [w.n_in, 1] (Backend::input_major_matvec), f32.
void input_major_matvec(const InputMajorQ4K& w, const Tensor& x, Tensor& y, int n_threads);
int64_t sparse_gated_activation(const SparseFfnArgs& args, Tensor& h, int n_threads, bool quantize_activations = true);

// expert_ffn.cpp: y += one token's routed experts (Backend::expert_ffn).
void expert_ffn(const ExpertFfnArgs& args, Tensor& y, int n_threads, bool quantize_activations = true);
// y = one token's top-k experts, routed from its logits on the host (Backend::routed_expert_ffn).
void routed_expert_ffn(const RoutedExpertFfnArgs& args, Tensor& y, int n_threads, bool quantize_activations = true);

// rope.cpp
void rope(Tensor& x, const int32_t* positions, const RopeParams& params, int n_threads);

// kv_store.cpp
void kv_store(const Tensor& src, Tensor& cache, int64_t first_cell, int n_threads);

// attention.cpp
void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
               const int32_t* positions, const AttentionParams& params, Tensor& out, int n_threads);

}  // namespace strata::cpu
