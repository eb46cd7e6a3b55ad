// The backend-ops table (tests/kernels_cpu/backend_ops.h) on the CUDA backend: every operation
// family against the scalar CPU reference within its CUDA bound. Skips without a GPU.
#include <gtest/gtest.h>

#include <string>

#include "tests/kernels_cpu/backend_ops.h"
#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

class CudaBackendOps : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaBackendOps, MatchesTheScalarReference) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    backend_ops::check_family(gpu, GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(Table, CudaBackendOps, ::testing::ValuesIn(backend_ops::families()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::cuda
