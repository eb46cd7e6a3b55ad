// Internal to kernels_cpu: row addressing of Tensor views and the argument checks every op
// shares. Checks throw ArgumentError / UnsupportedError with the op name and the shapes.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/core/op_checks.h"
#include "engine/core/tensor.h"

namespace strata::cpu {

// Byte address of row r of t, rows numbered over ne[1], ne[2], ne[3] (any byte strides).
inline uint8_t* row_ptr(const Tensor& t, int64_t r) {
    const int64_t i1 = r % t.ne[1];
    const int64_t rest = r / t.ne[1];
    const int64_t i2 = rest % t.ne[2];
    const int64_t i3 = rest / t.ne[2];
    return static_cast<uint8_t*>(t.data) + static_cast<uint64_t>(i1) * t.nb[1] +
           static_cast<uint64_t>(i2) * t.nb[2] + static_cast<uint64_t>(i3) * t.nb[3];
}

inline float* f32_row(const Tensor& t, int64_t r) {
    return reinterpret_cast<float*>(row_ptr(t, r));
}

// t lives in host-addressable memory and its rows are contiguous (nb[0] = bytes per block).
void check_host_rows(std::string_view op, std::string_view what, const Tensor& t);

// As check_host_rows, and t is f32.
void check_f32(std::string_view op, std::string_view what, const Tensor& t);

// a and b have the same ne.

// The type has a reference dequantizer (matmul weights, get_rows tables, KV caches).
void check_dequantizable(std::string_view op, std::string_view what, const Tensor& t);

// n_threads as given to the backend, 0 meaning one per physical core.
int resolve_threads(int n_threads);

}  // namespace strata::cpu
