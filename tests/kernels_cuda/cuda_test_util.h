// Helpers for the CUDA backend tests: skip without a GPU, a backend with a test-sized arena, and
// host <-> device copies of the CPU tests' HostTensor (device outputs start as NaN, so an
// element a kernel forgets to write fails the comparison).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_backend.h"
#include "kernels_cuda/cuda_backend.h"
#include "kernels_cuda/device_info.h"
#include "tests/kernels_cpu/test_util.h"

namespace strata::cuda::test {

using cpu::test::HostTensor;
using cpu::test::nmse;

inline bool has_gpu() {
    static const bool present = !list_devices().empty();
    return present;
}

#define STRATA_SKIP_WITHOUT_GPU() \
    if (!::strata::cuda::test::has_gpu()) GTEST_SKIP() << "no CUDA device on this machine"

inline CudaBackendOptions test_options() {
    CudaBackendOptions o;
    o.budget_bytes = 2ull << 30;
    return o;
}

// NMSE bound of an attention over n_tokens query tokens against the CPU's f32 sums on a backend
// with options o: the f32 kernels 1e-7; prefill on tensor cores (more tokens than the decode
// kernel takes) rounds Q, K, V and P to f16, as the f16 cuBLAS products round their operands.
inline double attention_nmse_bound(const CudaBackendOptions& o, int64_t n_tokens) {
    return o.attention_tensor_cores && n_tokens > o.attention_decode_max_tokens ? 1e-6 : 1e-7;
}

// A host tensor of the same type and shape as t.
inline HostTensor host_like(const Tensor& t) {
    return HostTensor(t.type, {t.ne[0], t.ne[1], t.ne[2], t.ne[3]});
}

inline DeviceTensor to_device(CudaBackend& backend, const HostTensor& h) {
    return backend.upload(h.t, "test tensor");
}

// A device f32 tensor of shape ne filled with NaN.
inline DeviceTensor nan_device(CudaBackend& backend, std::initializer_list<int64_t> ne) {
    HostTensor h(GgmlType::F32, ne);
    for (int64_t i = 0; i < h.size(); ++i) h.f32()[i] = std::numeric_limits<float>::quiet_NaN();
    return backend.upload(h.t, "test output");
}

inline HostTensor to_host(CudaBackend& backend, const Tensor& d) {
    HostTensor h = host_like(d);
    backend.download(d, h.t);
    return h;
}

// NMSE of a device f32 result against a host f32 reference of the same size.
inline double device_nmse(CudaBackend& backend, const Tensor& got, const HostTensor& ref) {
    const HostTensor g = to_host(backend, got);
    return nmse(ref.f32(), g.f32(), static_cast<size_t>(ref.size()));
}

inline cpu::CpuBackend& cpu_backend() {
    static cpu::CpuBackend backend(0);
    return backend;
}

}  // namespace strata::cuda::test
