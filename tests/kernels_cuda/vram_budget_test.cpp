// The CUDA backend stays inside its byte budget: measured with cudaMemGetInfo (through
// device_memory()), the process never holds more than the budget (arena + cuBLAS's own memory)
// plus the CUDA context and the kernels it loaded, while every op runs.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

using test::HostTensor;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBudget = 256 * kMiB;
// cudaMalloc rounds the arena up to its 2 MiB pages.
constexpr uint64_t kAllocationSlack = 2 * kMiB;

uint64_t used_bytes() {
    const DeviceMemory m = device_memory(0);
    return m.total_bytes - m.free_bytes;
}

// One pass over every op and path, calling `probe` after each (synchronized) step.
template <class Probe>
void run_every_op(CudaBackend& gpu, Probe&& probe) {
    const int64_t k = 2048, n = 4096, m = 33;
    const HostTensor w = cpu::test::random_weights(GgmlType::Q4_K, k, n);
    DeviceTensor wd = gpu.upload(w.t, "weights");
    DeviceTensor x = test::to_device(gpu, cpu::test::random_f32({k, m}));
    DeviceTensor y = gpu.allocate(GgmlType::F32, {n, m});
    for (int64_t tokens : {int64_t{1}, m}) {  // GEMV (dp4a) and cuBLAS on f16 tiles
        Tensor xs = x.tensor.rows(0, tokens), ys = y.tensor.rows(0, tokens);
        gpu.matmul(wd.tensor, xs, ys);
        gpu.synchronize();
        probe("matmul");
    }
    const std::vector<int32_t> ids = {1, 7, 4095};
    DeviceTensor rows = gpu.allocate(GgmlType::F32, {k, 3});
    gpu.get_rows(wd.tensor, ids.data(), 3, rows.tensor);
    gpu.rms_norm(rows.tensor, nullptr, 1e-6f, rows.tensor);
    gpu.add(rows.tensor, rows.tensor, rows.tensor);
    gpu.softcap(rows.tensor, 30.0f);
    gpu.gated_activation(rows.tensor, rows.tensor, Activation::GeluTanh, rows.tensor);
    gpu.synchronize();
    probe("element-wise");

    const int64_t cells = 2048, n_head = 8, n_kv = 2, hd = 128;
    DeviceTensor kc = gpu.allocate(GgmlType::Q8_0, {n_kv * hd, cells}, "K cache");
    DeviceTensor vc = gpu.allocate(GgmlType::Q8_0, {n_kv * hd, cells}, "V cache");
    DeviceTensor kv = test::to_device(gpu, cpu::test::random_f32({n_kv * hd, cells}));
    gpu.kv_store(kv.tensor, kc.tensor, 0);
    gpu.kv_store(kv.tensor, vc.tensor, 0);
    std::vector<int32_t> pos(17);
    for (int t = 0; t < 17; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(cells - 17 + t);
    DeviceTensor q = test::to_device(gpu, cpu::test::random_f32({hd, n_head, 17}));
    DeviceTensor out = gpu.allocate(GgmlType::F32, {hd, n_head, 17});
    RopeParams rp;
    rp.n_rot = static_cast<int>(hd);
    gpu.rope(q.tensor, pos.data(), rp);
    AttentionParams ap;
    ap.n_head = static_cast<int>(n_head);
    ap.n_head_kv = static_cast<int>(n_kv);
    ap.head_dim_k = ap.head_dim_v = static_cast<int>(hd);
    ap.scale = 0.088f;
    gpu.attention(q.tensor, kc.tensor, vc.tensor, cells, pos.data(), ap, out.tensor);  // tiled
    Tensor q1 = q.tensor, o1 = out.tensor;
    q1.ne[2] = o1.ne[2] = 1;
    gpu.attention(q1, kc.tensor, vc.tensor, cells, pos.data() + 16, ap, o1);  // decode, split keys
    gpu.synchronize();
    probe("attention");
}

TEST(CudaVramBudget, ProcessNeverHoldsMoreThanBudgetPlusContext) {
    STRATA_SKIP_WITHOUT_GPU();
    // The context alone (plus whatever else runs on the GPU; run this test in a process of its
    // own, as ctest does, for the context's true size).
    const uint64_t context = used_bytes();
    // Warm-up backend: loads every kernel the ops use (lazy module loading) once; then it is gone.
    {
        CudaBackendOptions o;
        o.budget_bytes = kBudget;
        CudaBackend warm(o);
        run_every_op(warm, [](const char*) {});
    }
    const uint64_t loaded = used_bytes();

    CudaBackendOptions o;
    o.budget_bytes = kBudget;
    uint64_t peak = 0;
    {
        CudaBackend gpu(o);
        const auto probe = [&](const char* step) {
            const uint64_t now = used_bytes();
            peak = std::max(peak, now);
            std::printf("[ vram ] %-13s %7.1f MiB over context + kernels\n", step, (now - loaded) / double(kMiB));
            EXPECT_LE(now, loaded + kBudget + kAllocationSlack) << "after " << step;
        };
        probe("construction");
        run_every_op(gpu, probe);
        EXPECT_LE(gpu.arena().capacity() + gpu.outside_arena_bytes(), kBudget);
        EXPECT_THROW(gpu.allocate(GgmlType::F32, {static_cast<int64_t>(kBudget / 4)}), BudgetError)
            << "a request beyond the budget is refused, not taken from the device";
        std::printf("[ vram ] context %.1f MiB, loaded kernels %.1f MiB, budget %.1f MiB = arena %.1f MiB + "
                    "cuBLAS %.1f MiB; peak over context + kernels %.1f MiB (arena peak %.1f MiB)\n",
                    context / double(kMiB), (loaded - context) / double(kMiB), kBudget / double(kMiB),
                    gpu.arena().capacity() / double(kMiB), gpu.outside_arena_bytes() / double(kMiB),
                    (peak - loaded) / double(kMiB), gpu.arena().peak() / double(kMiB));
    }
    EXPECT_LE(peak, loaded + kBudget + kAllocationSlack);
    EXPECT_LE(used_bytes(), loaded + kAllocationSlack) << "destroying the backend returns its memory";
}

TEST(CudaVramBudget, ArenaLargerThanTheDeviceIsRefused) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackendOptions o;
    o.budget_bytes = device_memory(0).total_bytes + kBudget;
    EXPECT_THROW(CudaBackend{o}, BudgetError);
}

}  // namespace
}  // namespace strata::cuda
