// CudaBackend::matmul: few tokens take the GEMV kernels (weights dequantized in registers, q8
// activations through dp4a where the type has it); batches dequantize f16 weight tiles into arena
// scratch and multiply with cuBLAS (f32 accumulation), f32 weights through SGEMM.
#include <algorithm>
#include <climits>
#include <string>

#include "engine/core/error.h"
#include "kernels_cuda/backend_impl.h"
#include "kernels_cuda/cuda_check.h"

namespace strata::cuda {
namespace {

constexpr int64_t kTileRowAlign = 64;

int to_int(int64_t v, const char* what) {
    if (v > INT_MAX) throw UnsupportedError(cat("matmul: ", what, " = ", v, " exceeds cuBLAS's int range"));
    return static_cast<int>(v);
}

// y [n, m] (leading dimension ldy floats) = W_f16 [k, n] (ld lda) · x_f16 [k, m] (ld k).
void gemm_f16(cublasHandle_t h, const void* w, int64_t lda, const void* x, int64_t k, int64_t n, int64_t m,
              float* y, int64_t ldy) {
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, to_int(n, "n"), to_int(m, "m"), to_int(k, "k"),
                              &alpha, w, CUDA_R_16F, to_int(lda, "lda"), x, CUDA_R_16F, to_int(k, "k"),
                              &beta, y, CUDA_R_32F, to_int(ldy, "ldy"), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
}

// "gemv_q8 q4_K 4096x11008 m=1 (23.2 MB)": the op timer's row for a product.
std::string op_label(const char* kind, const Tensor& w, int64_t m) {
    const double mb = static_cast<double>(w.row_bytes() * static_cast<uint64_t>(w.n_rows())) / 1e6;
    return cat(kind, " ", type_traits(w.type).name, " ", w.ne[0], "x", w.ne[1], " m=", m, " (", fixed(mb, 1), " MB)");
}

}  // namespace

CudaBackend::Impl::Q8Scratch CudaBackend::Impl::q8_scratch(int64_t m, int64_t k) {
    const uint64_t ds_offset = (static_cast<uint64_t>(m * k) + 15) / 16 * 16;
    const uint64_t bytes = ds_offset + static_cast<uint64_t>(m * (k / 32)) * 2 * sizeof(float);
    auto* buf = static_cast<uint8_t*>(scratch(x_q8, bytes, "matmul q8 activations"));
    return Q8Scratch{buf, reinterpret_cast<int8_t*>(buf), reinterpret_cast<float*>(buf + ds_offset)};
}

CudaBackend::Impl::Q8Scratch CudaBackend::Impl::quantized(const Tensor& x) {
    const Q8Scratch q8 = q8_scratch(x.n_rows(), x.ne[0]);
    // x was quantized by the last op (a quantization, or the RMSNorm / gated activation that
    // wrote it), which wrote no other device memory, so x_q8 still holds it. y never aliases x
    // (Backend's rule), so a product keeps it valid too.
    QuantizedX& last = quantized_x;
    const bool reuse = options.reuse_quantized_activations && last.valid && last.data == x.data && last.ne == x.ne &&
                       last.nb == x.nb && last.buf == q8.buf;
    if (!reuse) {
        const OpScope timed = time_op("quantize_rows_q8");
        forget_quantized_x();  // until the launch below has been queued
        quantize_rows_q8(f32_view(x), q8.xq, q8.xds, stream);
        last = QuantizedX{true, x.data, x.ne, x.nb, q8.buf};
    }
    return q8;
}

int CudaBackend::Impl::gemv_rows_per_warp(int64_t rows) const {
    int r = options.gemv_rows_per_warp;
    while (r > 1 && rows / r < sm_count) r /= 2;
    return r;
}

bool CudaBackend::Impl::use_gemv_mma(int64_t m) const {
    return options.gemv_mma_min_tokens > 0 && m >= options.gemv_mma_min_tokens && compute_major >= 8;
}

int64_t CudaBackend::Impl::gemv_q8_max_tokens() const {
    if (!options.quantize_activations) return 0;
    return std::max(options.gemv_max_tokens, options.gemv_chunk_max_tokens);
}

bool CudaBackend::Impl::fuse_q8(const Tensor& y) const {
    return options.reuse_quantized_activations && y.ne[0] % 32 == 0 && y.n_rows() <= gemv_q8_max_tokens() &&
           y.n_rows() > 0;
}

void CudaBackend::matmul(const Tensor& w, const Tensor& x, Tensor& y) {
    check_matmul(w, x, y);
    if (!codec_supported(w.type)) {
        throw UnsupportedError(cat("matmul: weight type ", type_traits(w.type).name,
                                   " is not supported on the CUDA backend"));
    }
    Impl& s = *impl_;
    const int64_t k = w.ne[0], n = w.ne[1], m = x.n_rows();
    if (n == 0 || m == 0) return;
    const auto* wd = static_cast<const uint8_t*>(w.data);

    if (m <= s.options.gemv_max_tokens) {
        if (s.options.quantize_activations && gemv_q8_supported(w.type)) {
            const Impl::Q8Scratch q8 = s.quantized(x);
            if (s.use_gemv_mma(m)) {
                const OpScope timed(s.timer.get(), s.stream, s.capturing, s.timer ? op_label("gemv_mma", w, m) : "");
                gemv_q8_mma(w.type, wd, w.nb[1], k, n, q8.xq, q8.xds, f32_view(y), s.stream);
                return;
            }
            const int rows_per_warp = s.gemv_rows_per_warp(n);
            const OpScope timed(s.timer.get(), s.stream, s.capturing, s.timer ? op_label("gemv_q8", w, m) : "");
            gemv_q8(w.type, wd, w.nb[1], k, n, q8.xq, q8.xds, rows_per_warp, f32_view(y), s.stream);
            return;
        }
        s.forget_quantized_x();  // y may cover the bytes of the x x_q8 was quantized from
        const OpScope timed(s.timer.get(), s.stream, s.capturing, s.timer ? op_label("gemv_float", w, m) : "");
        gemv_float(w.type, wd, w.nb[1], k, n, f32_view(x), f32_view(y), s.stream);
        return;
    }
    if (m <= s.gemv_q8_max_tokens() && gemv_q8_supported(w.type) && rows_evenly_strided(y)) {
        // Chunks of 8 columns, each the 8-token GEMV over its rows of x's q8 activations (one
        // quantization for all): every column gets the bits it gets in any other batch.
        const Impl::Q8Scratch q8 = s.quantized(x);
        const int rows_per_warp = s.gemv_rows_per_warp(n);
        const OpScope timed(s.timer.get(), s.stream, s.capturing, s.timer ? op_label("gemv_q8 chunks", w, m) : "");
        const F32View all = f32_view(y);
        for (int64_t c0 = 0; c0 < m; c0 += kGemvMaxCols) {
            const int64_t cols = std::min<int64_t>(kGemvMaxCols, m - c0);
            F32View part = all;
            part.data += static_cast<uint64_t>(c0) * y.nb[1];
            part.n_rows = cols;
            part.rows = RowLayout{cols, 1, y.nb[1], static_cast<uint64_t>(cols) * y.nb[1], static_cast<uint64_t>(cols) * y.nb[1]};
            gemv_q8(w.type, wd, w.nb[1], k, n, q8.xq + c0 * k, q8.xds + c0 * (k / 32) * 2, rows_per_warp, part, s.stream);
        }
        return;
    }
    const OpScope timed(s.timer.get(), s.stream, s.capturing, s.timer ? op_label("gemm", w, m) : "");
    s.forget_quantized_x();

    // cuBLAS path: column-major views, y [n, m] with leading dimension ldy.
    const int64_t ldy = static_cast<int64_t>(y.nb[1] / sizeof(float));
    auto* yd = static_cast<float*>(y.data);
    if (w.type == GgmlType::F32 && w.nb[1] % sizeof(float) == 0) {
        const float alpha = 1.0f, beta = 0.0f;
        CUBLAS_CHECK(cublasSgemm(s.cublas, CUBLAS_OP_T, CUBLAS_OP_N, to_int(n, "n"), to_int(m, "m"),
                                 to_int(k, "k"), &alpha, static_cast<const float*>(w.data),
                                 to_int(static_cast<int64_t>(w.nb[1] / sizeof(float)), "lda"),
                                 static_cast<const float*>(x.data),
                                 to_int(static_cast<int64_t>(x.nb[1] / sizeof(float)), "ldx"), &beta, yd,
                                 to_int(ldy, "ldy")));
        return;
    }
    void* x16 = s.scratch(s.x_f16, static_cast<uint64_t>(m * k) * 2, "matmul f16 activations");
    convert_rows_f16(f32_view(x), static_cast<uint16_t*>(x16), s.stream);
    if (w.type == GgmlType::F16 && w.nb[1] % 2 == 0) {
        gemm_f16(s.cublas, w.data, static_cast<int64_t>(w.nb[1] / 2), x16, k, n, m, yd, ldy);
        return;
    }
    // Dequantize W in tiles of rows so the f16 copy never exceeds gemm_tile_bytes.
    const uint64_t row_f16 = static_cast<uint64_t>(k) * 2;
    int64_t tile_rows = static_cast<int64_t>(s.options.gemm_tile_bytes / row_f16);
    tile_rows = std::max<int64_t>(kTileRowAlign, tile_rows / kTileRowAlign * kTileRowAlign);
    tile_rows = std::min(tile_rows, n);
    void* tile = s.scratch(s.w_tile, static_cast<uint64_t>(tile_rows) * row_f16, "matmul f16 weight tile");
    for (int64_t row0 = 0; row0 < n; row0 += tile_rows) {
        const int64_t rows = std::min(tile_rows, n - row0);
        dequantize_rows_f16(w.type, wd + static_cast<uint64_t>(row0) * w.nb[1], w.nb[1], k, rows,
                            static_cast<uint16_t*>(tile), s.stream);
        gemm_f16(s.cublas, tile, k, x16, k, rows, m, yd + row0, ldy);
    }
}

// Decode products of one input: each run of consecutive weights with one dp4a type and shape
// is one batched GEMV launch over x quantized once (as an expert_ffn's gates are); the rest go
// through matmul.
void CudaBackend::matmul_many(const Tensor& x, std::span<const MatmulOut> outs) {
    Impl& s = *impl_;
    const bool q8 = x.n_rows() == 1 && s.options.quantize_activations && s.options.gemv_max_tokens >= 1;
    const auto batchable = [&](const Tensor& w, const Tensor& first) {
        return w.type == first.type && w.nb[1] == first.nb[1] && w.ne[0] == first.ne[0] && w.ne[1] == first.ne[1];
    };
    size_t i = 0;
    while (i < outs.size()) {
        const Tensor& first = *outs[i].w;
        size_t end = i + 1;
        if (q8 && gemv_q8_supported(first.type)) {
            while (end < outs.size() && end - i < static_cast<size_t>(kGemvBatchMax) && batchable(*outs[end].w, first)) ++end;
        }
        if (end - i == 1) {
            matmul(first, x, *outs[i].y);
            ++i;
            continue;
        }
        GemvBatch batch;
        for (size_t j = i; j < end; ++j) {
            const Tensor& w = *outs[j].w;
            Tensor& y = *outs[j].y;
            check_matmul(w, x, y);
            if (!y.is_contiguous()) throw ArgumentError(cat("matmul_many: y ", y.shape_string(), " must be contiguous"));
            batch.w[j - i] = static_cast<const uint8_t*>(w.data);
            batch.y[j - i] = y.as<float>();
        }
        const int count = static_cast<int>(end - i);
        const int64_t k = first.ne[0], n = first.ne[1];
        const Impl::Q8Scratch xq = s.quantized(x);
        const OpScope timed(s.timer.get(), s.stream, s.capturing,
                            s.timer ? cat(op_label("gemv_q8", first, 1), " x", count) : "");
        gemv_q8_batch(first.type, batch, count, first.nb[1], k, n, xq.xq, xq.xds, s.gemv_rows_per_warp(n * count), s.stream);
        i = end;
    }
}

}  // namespace strata::cuda
