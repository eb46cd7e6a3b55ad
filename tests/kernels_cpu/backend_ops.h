// The backend-ops table (after ggml's test-backend-ops): every operation of the Backend
// interface (engine/core/backend.h) as a list of cases on random inputs, each run on any backend
// through its own memory (allocate, copy_in, copy_out) and compared with the scalar reference: a
// CpuBackend forced to KernelVariant::Dequant (f32 dequantize path and the scalar row ops, both
// checked against double-precision references in matmul_test.cpp and ops_variants_test.cpp).
// backend_ops_test.cpp runs the table on the CPU variants and the fake device;
// tests/kernels_cuda/backend_ops_cuda_test.cpp on CUDA. Error bounds: see backend_ops.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/buffer.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::backend_ops {

using cpu::test::HostTensor;

// Host tensors moved into one backend's memory and read back from it. Outputs start as NaN
// (f32) or 0xA5 bytes, so an element an op forgets to write fails the comparison.
class OnBackend {
  public:
    explicit OnBackend(Backend& backend) : backend_(backend) {}
    Backend& backend() { return backend_; }
    // A copy of the contiguous host tensor h in the backend's memory.
    Tensor put(const HostTensor& h);
    // An f32 tensor of shape ne full of NaN in the backend's memory.
    Tensor nan_f32(std::initializer_list<int64_t> ne);
    // t (any type the reference dequantizes) read back as f32.
    std::vector<float> read(const Tensor& t);

  private:
    Backend& backend_;
    std::vector<Buffer> buffers_;
};

// NMSE allowed against the reference, for the CPU backends (and the fake device, which runs on
// the CPU) and for CUDA.
struct Bound {
    double cpu = 0.0;
    double cuda = 0.0;
};

inline constexpr double kPooledCaseFactor = 30.0;

// One operation on fixed random inputs: `run` performs it on a backend and returns its output.
struct OpCase {
    std::string name;  // "q4_K_prefill17": type and shape class within its family
    Bound bound;
    std::function<std::vector<float>(OnBackend&)> run;
    // Cases with the same non-empty pool are also judged together: their errors and norms
    // summed, against `bound`, while each alone may reach kPooledCaseFactor times it (a
    // statistical bound says little about a handful of outputs, one of which may be near 0).
    std::string pool;
    // Activation-sparsity op: the last output is the op's count (compared exactly), and
    // backends without the op throw UnsupportedError (the test then skips them).
    bool sparse = false;
};

// The families of operations, one gtest case per family and backend.
const std::vector<std::string>& families();

// A family's cases, built once per process on first use (inputs from a fixed seed).
const std::vector<OpCase>& cases_of(const std::string& family);

// Runs every case of `family` on `backend` with the CPU kernel variant `variant` in force and
// checks each against the reference within its bound (`cuda` picks the CUDA bound); reports
// failures naming the case. Leaves the variant on Auto.
void check_family(Backend& backend, const std::string& family, bool cuda,
                  cpu::KernelVariant variant = cpu::KernelVariant::Auto);

inline std::string type_name(GgmlType type) {
    return std::string(type_traits(type).name);
}

// The weight types of the table: every type quant/ dequantizes that matmul takes.
const std::vector<GgmlType>& weight_types();

// A [k, n] weight matrix of `type` from random floats through quant/'s quantizer (random valid
// blocks for the types without one); `source` receives those floats where there were some.
HostTensor random_weights(GgmlType type, int64_t k, int64_t n,
                          std::vector<float>* source = nullptr);

// The NMSE bound of matmul on `type` (the reasoning is with its definition).
Bound matmul_bound(GgmlType type);

}  // namespace strata::backend_ops
