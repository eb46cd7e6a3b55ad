// Internal to kernels_cpu: f32 vector primitives the ops are built from. Plain loops with
// several partial sums, compiled in clones for AVX-512 / AVX2 / baseline chosen at load time.
#pragma once

#include <cstdint>

namespace strata::cpu {

// Σ a[i]·b[i] over n elements, f32 with 32 partial sums combined in a fixed order.
float dot_f32(const float* a, const float* b, int64_t n);

// out[r] = Σ w[r·w_stride + i]·x[i] for r = 0..3: four rows against one x, so x is read once.
// Each out[r] is bit-identical to what the same loop gives for any other row of the tile.
void dot4_f32(const float* w, int64_t w_stride, const float* x, int64_t n, float out[4]);

// y[i] += a·x[i].
void axpy_f32(float* y, const float* x, float a, int64_t n);

// y[i] *= s.
void scale_f32(float* y, float s, int64_t n);

}  // namespace strata::cpu
