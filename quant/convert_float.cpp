// Reference rows of the plain float types F32, F16 and BF16, in both directions.
// The conversions themselves live in quant/half.h; these only walk rows.
#include <cstring>

#include "quant/half.h"
#include "quant/reference.h"

namespace strata {

void dequantize_f32(const void* src, float* dst, int64_t n) {
    require_whole_blocks("f32", n, 1);
    if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
    require_whole_blocks("f16", n, 1);
    const auto* h = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
    require_whole_blocks("bf16", n, 1);
    const auto* b = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(b[i]);
}

void quantize_f32(const float* src, void* dst, int64_t n) {
    require_whole_blocks("f32", n, 1);
    if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void quantize_f16(const float* src, void* dst, int64_t n) {
    require_whole_blocks("f16", n, 1);
    auto* h = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(src[i]);
}

void quantize_bf16(const float* src, void* dst, int64_t n) {
    require_whole_blocks("bf16", n, 1);
    auto* b = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) b[i] = fp32_to_bf16(src[i]);
}

}  // namespace strata
