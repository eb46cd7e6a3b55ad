// The oneDNN prefill path of matmul (dnnl_matmul.h): per W row tile, dequantize to bf16 with
// quant/'s dequantizer, then one cached oneDNN matmul primitive writes that tile's columns of y.
#include "kernels_cpu/dnnl_matmul.h"

#include <cstring>

#include "engine/core/env_switch.h"
#include "engine/core/error.h"
#include "kernels_cpu/cpu_features.h"
#include "quant/ggml_type.h"

#if defined(STRATA_HAVE_DNNL)
#include <omp.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels_cpu/op_args.h"
#include "kernels_cpu/thread_scratch.h"
#include "quant/half.h"
#endif

namespace strata::cpu {

bool y_rows_uniform(const Tensor& y) {
    return (y.ne[2] == 1 || y.nb[2] == y.nb[1] * static_cast<uint64_t>(y.ne[1])) &&
           (y.ne[3] == 1 || y.nb[3] == y.nb[2] * static_cast<uint64_t>(y.ne[2]));
}

namespace {

bool disabled_by_env() {
    static const bool disabled = env_turned_off("STRATA_DNNL");
    return disabled;
}

}  // namespace

#if defined(STRATA_HAVE_DNNL)
namespace {

using dnnl::memory;

// bf16 elements per dequantized W tile (64 MiB: all of a 4096 x 4096 or 4096 x 8192 W).
// Small tiles were slow with oneDNN 2.6 (4096 x 4096, m = 512, AVX-512 bf16 brgemm: 512-row
// tiles 230 ms, 2048-row 96 ms, one 4096-row tile 63 ms): it repacks plain weights inside
// every execute, which pays off only over many columns. Bounds the scratch for huge W.
constexpr int64_t kTileElements = int64_t{32} << 20;

// W rows per tile: a multiple of 64 (oneDNN's N blocking), all of W when it fits; depends on
// the shape only.
int64_t tile_rows(int64_t k, int64_t n) {
    const int64_t rows = std::max<int64_t>(kTileElements / std::max<int64_t>(k, 1) / 64 * 64, 64);
    return std::min(rows, n);
}

// dst [m, rows] = src [m, k] · wei [k, rows]; wei is our W tile [rows][k] read as "ba". dst is
// dense: with a row stride other than `rows` oneDNN 2.6 leaves its brgemm kernels (AMX,
// AVX-512) for a generic gemm that ran 2.5x slower here.
memory::desc src_desc(int64_t m, int64_t k) {
    return memory::desc({m, k}, memory::data_type::bf16, memory::format_tag::ab);
}
memory::desc wei_desc(int64_t k, int64_t rows) {
    return memory::desc({k, rows}, memory::data_type::bf16, memory::format_tag::ba);
}
memory::desc dst_desc(int64_t m, int64_t rows) {
    return memory::desc({m, rows}, memory::data_type::f32, memory::format_tag::ab);
}

dnnl::matmul::primitive_desc make_pd(const dnnl::engine& eng, int64_t m, int64_t k, int64_t rows) {
    const memory::desc src = src_desc(m, k), wei = wei_desc(k, rows), dst = dst_desc(m, rows);
#if DNNL_VERSION_MAJOR >= 3
    return dnnl::matmul::primitive_desc(eng, src, wei, dst);
#else
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei, dst), eng);
#endif
}

// One engine and one primitive per (m, k, tile rows), made on first use.
// Primitives are immutable, so threads share them; the map is guarded.
class PrimitiveCache {
  public:
    static PrimitiveCache& get() {
        static PrimitiveCache cache;
        return cache;
    }
    const dnnl::engine& engine() const { return engine_; }

    dnnl::matmul find(int64_t m, int64_t k, int64_t rows) {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto key = std::make_tuple(m, k, rows);
        auto it = primitives_.find(key);
        if (it == primitives_.end()) {
            it = primitives_.emplace(key, dnnl::matmul(make_pd(engine_, m, k, rows))).first;
        }
        return it->second;
    }

  private:
    dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
    std::mutex mutex_;
    std::map<std::tuple<int64_t, int64_t, int64_t>, dnnl::matmul> primitives_;
};

// Sets the calling thread's OpenMP team size (oneDNN runs on the same OpenMP runtime and
// takes omp_get_max_threads() at execute time) and restores it.
class ScopedOmpThreads {
  public:
    explicit ScopedOmpThreads(int n) : saved_(omp_get_max_threads()) { omp_set_num_threads(n); }
    ~ScopedOmpThreads() { omp_set_num_threads(saved_); }
    ScopedOmpThreads(const ScopedOmpThreads&) = delete;
    ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

  private:
    int saved_;
};

void to_bf16(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        dst[i] = fp32_to_bf16(src[i]);
}

bool probe_bf16_matmul() {
    try {
        make_pd(PrimitiveCache::get().engine(), 32, 256, 64);
        return true;
    } catch (const dnnl::error&) {
        return false;  // e.g. no AVX-512: oneDNN has no bf16 matmul here
    }
}

}  // namespace

bool dnnl_matmul_available() {
    static const bool available = !disabled_by_env() && probe_bf16_matmul();
    return available;
}

void dnnl_matmul(const Tensor& w, const Tensor& x, Tensor& y, int n_threads, int64_t tile) {
    if (!dnnl_matmul_available()) {
        throw UnsupportedError(
            "matmul: the oneDNN path is not available (STRATA_DNNL=0, or "
            "oneDNN has no bf16 matmul on this CPU)");
    }
    const int64_t k = w.ne[0], n = w.ne[1], m = x.n_rows();
    tile = tile > 0 ? std::min(tile, n) : tile_rows(k, n);
    const DequantizeFn dequantize = type_traits(w.type).dequantize;
    PrimitiveCache& cache = PrimitiveCache::get();
    const dnnl::engine& eng = cache.engine();
    ScopedOmpThreads threads(n_threads);
    // One tile over a dense y writes y directly; otherwise each tile lands in a dense buffer.
    const bool direct = tile == n && y.nb[1] == static_cast<uint64_t>(n) * sizeof(float);

    // Per-thread scratch (thread_scratch.h): tens of MiB allocated afresh on every call cost a
    // third of the matmul at m = 512.
    thread_local ThreadScratch x_scratch, w_scratch, y_scratch;
    const auto size = [](int64_t elements) { return static_cast<size_t>(elements); };
    uint16_t* const xb = x_scratch.get_as<uint16_t>(size(m * k));                 // [m][k] bf16
    uint16_t* const wb = w_scratch.get_as<uint16_t>(size(tile * k));              // [tile][k] bf16
    float* const yb = direct ? nullptr : y_scratch.get_as<float>(size(m * tile));  // [m][tile] f32
#pragma omp parallel for num_threads(n_threads) schedule(static)
    for (int64_t i = 0; i < m; ++i)
        to_bf16(f32_row(x, i), xb + i * k, k);
    try {
        dnnl::stream stream(eng);
        const memory src(src_desc(m, k), eng, xb);
        for (int64_t row0 = 0; row0 < n; row0 += tile) {
            const int64_t rows = std::min(tile, n - row0);
#pragma omp parallel num_threads(n_threads)
            {
                std::vector<float> row(static_cast<size_t>(k));
#pragma omp for schedule(static)
                for (int64_t r = 0; r < rows; ++r) {
                    dequantize(row_ptr(w, row0 + r), row.data(), k);
                    to_bf16(row.data(), wb + r * k, k);
                }
            }
            const memory wei(wei_desc(k, rows), eng, wb);
            const memory dst(dst_desc(m, rows), eng, direct ? f32_row(y, 0) : yb);
            cache.find(m, k, rows)
                .execute(stream,
                         {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
            stream.wait();
            if (!direct) {
#pragma omp parallel for num_threads(n_threads) schedule(static)
                for (int64_t i = 0; i < m; ++i)
                    std::memcpy(f32_row(y, i) + row0, yb + i * rows, rows * sizeof(float));
            }
        }
    } catch (const dnnl::error& e) {
        throw UnsupportedError(cat("matmul: oneDNN failed on W ", w.shape_string(), " x ",
                                   x.shape_string(), ": ", e.what()));
    }
}

#else  // !STRATA_HAVE_DNNL

bool dnnl_matmul_available() {
    return false;
}

void dnnl_matmul(const Tensor&, const Tensor&, Tensor&, int, int64_t) {
    throw UnsupportedError(
        "matmul: this build has no oneDNN (libdnnl-dev was not found by "
        "CMake); the oneDNN path is compiled out");
}

#endif

bool use_dnnl_matmul(GgmlType type, int64_t m, const DnnlPolicy& policy) {
    if (policy.min_rows <= 0 || m < policy.min_rows) return false;
    if (!type_traits(type).is_quantized) return false;
    if (policy.require_amx && !cpu_features().amx_bf16) return false;
    return dnnl_matmul_available();
}

}  // namespace strata::cpu
