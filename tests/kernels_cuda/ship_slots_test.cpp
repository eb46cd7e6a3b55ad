// ship_in / release_slot: weights copied into two alternating slots on the copy stream, each
// multiplied right after its copy, give the products of the same weights resident on the device
// bit for bit. The products are long against the copies (4096 tokens), so a copy that did not
// wait for the last readers of its slot, or a product that did not wait for its copy, would
// show. Sources: registered host memory, pageable memory (staged), and pinned memory that is
// overwritten as soon as ship_in returns (its contract).
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "tests/kernels_cuda/cuda_test_util.h"

namespace strata::cuda {
namespace {

constexpr int64_t kK = 1024;     // weight row length
constexpr int64_t kN = 1024;     // weight rows
constexpr int64_t kM = 4096;     // tokens
constexpr int kWeights = 7;
constexpr size_t kWeightBytes = static_cast<size_t>(kK * kN) * sizeof(float);

enum class Source { Registered, Pageable, Pinned };

Source source_of(int i) { return i % 3 == 0 ? Source::Registered : i % 3 == 1 ? Source::Pageable : Source::Pinned; }

TEST(ShipSlots, AlternatingSlotsGiveTheResidentProducts) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    // Every weight's values, kept to build the resident products and refill pinned memory.
    std::vector<std::vector<float>> values(kWeights, std::vector<float>(static_cast<size_t>(kK * kN)));
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& v : values)
        for (float& f : v) f = normal(rng);

    // Host homes: one registered block for the registered weights, vectors, one pinned buffer.
    const size_t reg_bytes = (kWeights * kWeightBytes + page - 1) / page * page;
    auto* reg = static_cast<uint8_t*>(std::aligned_alloc(page, reg_bytes));
    ASSERT_NE(reg, nullptr);
    std::vector<std::vector<float>> pageable(kWeights);
    float* pinned = nullptr;
    ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&pinned), kWeightBytes), cudaSuccess);
    for (int i = 0; i < kWeights; ++i) {
        if (source_of(i) == Source::Registered) std::memcpy(reg + i * kWeightBytes, values[i].data(), kWeightBytes);
        if (source_of(i) == Source::Pageable) pageable[i] = values[i];
    }
    Buffer handle = gpu.register_host_memory(reg, reg_bytes);
    ASSERT_TRUE(handle);

    test::HostTensor x(GgmlType::F32, {kK, kM});
    for (int64_t i = 0; i < x.size(); ++i) x.f32()[i] = normal(rng);
    DeviceTensor dx = test::to_device(gpu, x);

    // The resident products.
    std::vector<test::HostTensor> want;
    for (int i = 0; i < kWeights; ++i) {
        const Tensor h = Tensor::contiguous(GgmlType::F32, values[i].data(), {kK, kN});
        DeviceTensor w = gpu.upload(h, "resident weight");
        DeviceTensor y = test::nan_device(gpu, {kN, kM});
        gpu.matmul(w.tensor, dx.tensor, y.tensor);
        want.push_back(test::to_host(gpu, y.tensor));
    }

    // Shipped: all queued before any result is read back.
    std::vector<DeviceTensor> slots;
    for (int s = 0; s < Backend::kShipSlots; ++s) slots.push_back(gpu.allocate(GgmlType::F32, {kK, kN}, "slot"));
    std::vector<DeviceTensor> got;
    for (int i = 0; i < kWeights; ++i) {
        const int s = i % Backend::kShipSlots;
        Tensor src;
        switch (source_of(i)) {
            case Source::Registered:
                src = Tensor::contiguous(GgmlType::F32, reg + i * kWeightBytes, {kK, kN}, MemoryKind::Host);
                break;
            case Source::Pageable:
                src = Tensor::contiguous(GgmlType::F32, pageable[i].data(), {kK, kN}, MemoryKind::Host);
                break;
            case Source::Pinned:
                std::memcpy(pinned, values[i].data(), kWeightBytes);
                src = Tensor::contiguous(GgmlType::F32, pinned, {kK, kN}, MemoryKind::PinnedHost);
                break;
        }
        gpu.ship_in(src, slots[static_cast<size_t>(s)].tensor, s);
        // ship_in returned: the source may be reused. Spoil pinned and pageable sources.
        if (source_of(i) == Source::Pinned) std::memset(pinned, 0x7f, kWeightBytes);
        if (source_of(i) == Source::Pageable) std::fill(pageable[i].begin(), pageable[i].end(), 1e30f);
        got.push_back(test::nan_device(gpu, {kN, kM}));
        gpu.matmul(slots[static_cast<size_t>(s)].tensor, dx.tensor, got.back().tensor);
        gpu.release_slot(s);
    }
    for (int i = 0; i < kWeights; ++i) {
        const test::HostTensor g = test::to_host(gpu, got[static_cast<size_t>(i)].tensor);
        ASSERT_EQ(std::memcmp(g.f32(), want[static_cast<size_t>(i)].f32(), static_cast<size_t>(kN * kM) * sizeof(float)), 0)
            << "weight " << i << " (slot " << i % Backend::kShipSlots << ")";
    }
    EXPECT_THROW(gpu.ship_in(Tensor::contiguous(GgmlType::F32, values[0].data(), {kK, kN}), slots[0].tensor, 2),
                 ArgumentError);
    EXPECT_THROW(gpu.release_slot(-1), ArgumentError);
    handle.reset();
    cudaFreeHost(pinned);
    std::free(reg);
}

}  // namespace
}  // namespace strata::cuda
