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
constexpr size_t kBulk = size_t{8} << 20;  // the backend's pinned chunk (cuda_backend.cpp)

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

// A staged weight copy on the copy stream and a download on the compute stream share the
// backend's pinned chunks: the download must not overwrite a chunk the copy has yet to read.
// The copy waits behind long products that still read its slot, while the download is queued
// right after them. (Without the download's wait for the chunk this still passed 3 of 3 on the
// H200: both copies sweep the chunk front to back at PCIe speed, so the race needs the download
// to run ahead of the copy; the test guards the ordering, it does not force the race.)
TEST(ShipSlots, AStagedCopyAndADownloadDoNotShareAChunk) {
    STRATA_SKIP_WITHOUT_GPU();
    CudaBackend gpu(test::test_options());
    constexpr int64_t k = 2048, n = 2048, m = 8192;  // 16 MiB of f32 weights: two 8 MiB chunks
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> first(static_cast<size_t>(k * n)), second(first.size());
    for (float& f : first) f = normal(rng);
    for (float& f : second) f = normal(rng);
    test::HostTensor x(GgmlType::F32, {k, m});
    for (int64_t i = 0; i < x.size(); ++i) x.f32()[i] = normal(rng);
    DeviceTensor dx = test::to_device(gpu, x);
    const Tensor second_host = Tensor::contiguous(GgmlType::F32, second.data(), {k, n});
    DeviceTensor resident = gpu.upload(second_host, "resident weight");
    DeviceTensor want = test::nan_device(gpu, {n, m});
    gpu.matmul(resident.tensor, dx.tensor, want.tensor);
    const test::HostTensor want_host = test::to_host(gpu, want.tensor);

    // 8 MiB to download, of other values than either weight.
    test::HostTensor other(GgmlType::F32, {static_cast<int64_t>(kBulk / sizeof(float))});
    for (int64_t i = 0; i < other.size(); ++i) other.f32()[i] = 1e6f + static_cast<float>(i);
    DeviceTensor dother = test::to_device(gpu, other);

    DeviceTensor slot = gpu.allocate(GgmlType::F32, {k, n}, "slot");
    DeviceTensor y = test::nan_device(gpu, {n, m});
    for (int round = 0; round < 3; ++round) {
        gpu.ship_in(Tensor::contiguous(GgmlType::F32, first.data(), {k, n}), slot.tensor, 0);
        for (int i = 0; i < 8; ++i) gpu.matmul(slot.tensor, dx.tensor, y.tensor);  // long readers of slot 0
        gpu.release_slot(0);
        gpu.ship_in(second_host, slot.tensor, 0);                   // waits for them on the copy stream
        const test::HostTensor back = test::to_host(gpu, dother.tensor);  // the compute stream's download
        ASSERT_EQ(std::memcmp(back.f32(), other.f32(), kBulk), 0);
        gpu.matmul(slot.tensor, dx.tensor, y.tensor);
        gpu.release_slot(0);
        const test::HostTensor got = test::to_host(gpu, y.tensor);
        ASSERT_EQ(std::memcmp(got.f32(), want_host.f32(), static_cast<size_t>(n * m) * sizeof(float)), 0)
            << "round " << round;
    }
}

}  // namespace
}  // namespace strata::cuda
