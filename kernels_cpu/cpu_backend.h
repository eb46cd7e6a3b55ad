// CpuBackend: the Backend for host memory. Every op is synchronous and multi-threaded with
// OpenMP inside the call; results are bit-identical for any thread count.
#pragma once

#include <string_view>

#include "engine/core/backend.h"

namespace strata::cpu {

class CpuBackend : public Backend {
  public:
    // n_threads: OpenMP threads per op; 0 = one per physical core (cpu_features()).
    explicit CpuBackend(int n_threads = 0);

    int n_threads() const { return n_threads_; }

    std::string_view name() const override { return "cpu"; }
    // Reads Host, PinnedHost and File (mmap'd) tensors; refuses Device tensors.
    MemoryKind memory_kind() const override { return MemoryKind::Host; }

    void matmul(const Tensor& w, const Tensor& x, Tensor& y) override;
    void get_rows(const Tensor& table, const int32_t* ids, int64_t n, Tensor& out) override;
    void rms_norm(const Tensor& x, const Tensor* weight, float eps, Tensor& y) override;
    void add(const Tensor& a, const Tensor& b, Tensor& y) override;
    void scale(Tensor& x, float s) override;
    void gated_activation(const Tensor& gate, const Tensor& up, Activation act, Tensor& y) override;
    void rope(Tensor& x, const int32_t* positions, const RopeParams& params) override;
    void kv_store(const Tensor& src, Tensor& cache, int64_t first_cell) override;
    void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t n_cells,
                   const int32_t* positions, const AttentionParams& params, Tensor& out) override;
    void softcap(Tensor& x, float cap) override;
    void synchronize() override {}

  private:
    int n_threads_;
};

}  // namespace strata::cpu
