// CpuBackend: the Backend for host memory. Every op is synchronous and multi-threaded with
// OpenMP inside the call; results are bit-identical for any thread count (and a matmul row's
// result does not depend on how many rows x has), except on the oneDNN prefill path
// (dnnl_min_rows below), whose rounding depends on the batch and on oneDNN's blocking.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "engine/core/backend.h"
#include "kernels_cpu/op_times.h"

namespace strata {
class BackendRegistry;
}

namespace strata::cpu {

// Adds "cpu" to `registry` (cpu_registration.cpp).
void register_cpu_backend(BackendRegistry& registry);

struct CpuBackendOptions {
    // OpenMP threads per op; 0 = one per physical core (cpu_features()).
    int n_threads = 0;
    // matmul quantizes the activations to the weight type's 8-bit partner and runs integer
    // kernels (kernel_variant.h: AVX-512 VNNI, AVX2 or scalar) for the types that have them;
    // false keeps every matmul on the f32 dequantize path (reference precision, ~10x slower
    // decode). Rounding x to 8 bits costs a matmul NMSE of ~1.5e-5 (docs/BENCHMARKS.md).
    bool quantize_activations = true;
    // matmuls with at least this many activation rows on block-quantized W run on oneDNN
    // (dnnl_matmul.h): W dequantized per call in tiles to bf16, x rounded to bf16 (NMSE
    // ~1e-5, like the 8-bit path), AMX tiles doing the products. 0 disables it; so does the
    // environment variable STRATA_DNNL=0, and builds without oneDNN (libdnnl-dev) lack it;
    // quantize_activations = false and STRATA_CPU_KERNELS=dequant keep the exact f32 path.
    // Measured on the GPU machine's Sapphire Rapids (AMX-BF16, 16 threads; kernels_cpu_bench
    // --benchmark_filter=bm_prefill_backend, Q4_K, 2026-11-21): ours / oneDNN at m = 32: 0.52 /
    // 1.18 ms (4096 x 4096), 1.29 / 2.53 (11008 x 4096); m = 64: 1.00 / 1.04, 2.51 / 2.88;
    // m = 128: 2.02 / 1.30, 5.27 / 3.45; m = 512: 7.92 / 2.78, 20.7 / 9.2. Whole 7B prefill
    // pp512 on that CPU: 313 tok/s with oneDNN, 153 without. On the dev box (avx512_bf16, no
    // AMX) oneDNN won only at m = 512 (80.0 vs 61.5 ms), hence the AMX requirement.
    int64_t dnnl_min_rows = 128;
    // false: take the oneDNN path on any CPU where oneDNN has a bf16 matmul (AVX-512), not
    // only with AMX-BF16. For tests and comparisons; slower than ours without AMX.
    bool dnnl_require_amx = true;
};

class CpuBackend : public Backend {
  public:
    explicit CpuBackend(int n_threads = 0);
    explicit CpuBackend(const CpuBackendOptions& options);

    int n_threads() const { return n_threads_; }
    bool quantize_activations() const { return options_.quantize_activations; }
    int64_t dnnl_min_rows() const { return options_.dnnl_min_rows; }

    std::string_view name() const override { return "cpu"; }
    // Reads Host, PinnedHost and File (mmap'd) tensors; refuses Device tensors.
    MemoryKind memory_kind() const override { return MemoryKind::Host; }
    // The host's RAM; used and peak are this backend's allocations. No limit of its own.
    BackendMemory memory() const override;
    // Every type with a reference dequantizer, sparse FFN ops (predicted too), no graphs.
    const BackendCapabilities& capabilities() const override { return capabilities_; }

    // Host memory, 64-byte aligned; counted (allocated_bytes) but not limited here: the RAM
    // budget is the placement's to keep.
    Buffer allocate(uint64_t bytes, std::string_view what) override;
    void copy_in(const Tensor& src, Tensor& dst) override;
    void copy_out(const Tensor& src, Tensor& dst) override;
    uint64_t allocated_bytes() const { return allocated_.load(); }
    uint64_t peak_allocated_bytes() const { return peak_.load(); }

    void matmul(const Tensor& w, const Tensor& x, Tensor& y) override;
    void get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out) override;
    void rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y) override;
    void add(const Tensor& a, const Tensor& b, Tensor& y) override;
    void scale(Tensor& x, float s) override;
    void combine_rows(const Tensor& x, const RowCombine& c, Tensor& y) override;
    void gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y) override;
    void rope(Tensor& x, const int32_t* positions, const RopeParams& params) override;
    void kv_store(const Tensor& src, Tensor& cache, int64_t first_cell) override;
    void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                   const int32_t* positions, const AttentionParams& params, Tensor& out) override;
    void softcap(Tensor& x, float cap) override;
    int64_t thresholded_gated_activation(const Tensor& gate, const Tensor& up, Activation act, float threshold,
                                         Tensor& y) override;
    int64_t sparse_gated_ffn(const SparseFfnArgs& args, Tensor& y) override;
    int64_t predicted_sparse_gated_ffn(const PredictedFfnArgs& args, Tensor& y) override;
    int64_t mask_small_values(Tensor& x, float threshold) override;
    int64_t sparse_gated_activation(const SparseFfnArgs& args, Tensor& h) override;
    void input_major_matvec(const InputMajorQ4K& w, const Tensor& x, Tensor& y) override;
    void expert_ffn(const ExpertFfnArgs& args, Tensor& y) override;
    // Any experts expert_ffn takes: the routing runs on the host.
    bool routes_experts(std::span<const ExpertRef> experts, int64_t n_used, Activation act) const override;
    void routed_expert_ffn(const RoutedExpertFfnArgs& args, Tensor& y) override;
    void synchronize() override {}

  private:
    int n_threads_;
    CpuBackendOptions options_;  // as given (n_threads_ is the resolved count)
    CpuOpTimes* times_ = CpuOpTimes::from_environment();  // STRATA_CPU_OP_TIMES, else null
    BackendCapabilities capabilities_;
    std::atomic<uint64_t> allocated_{0};
    std::atomic<uint64_t> peak_{0};
};

}  // namespace strata::cpu
