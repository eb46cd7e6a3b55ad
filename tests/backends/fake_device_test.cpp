// The fake device: budget, memory checks and transfer counts — and the host-copy helpers it
// builds on (Tensor::columns, copy_host_tensor), against hand-computed layouts.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "engine/core/error.h"
#include "kernels_cpu/cpu_backend.h"
#include "backends/fake_device.h"

namespace strata {
namespace {

TEST(FakeDevice, EnforcesItsBudgetAndGivesMemoryBack) {
    FakeDeviceBackend dev({.budget_bytes = 4096});
    {
        Buffer a = dev.allocate(3000, "a");
        EXPECT_EQ(a.memory(), MemoryKind::Device);
        EXPECT_THROW(dev.allocate(2000, "b"), BudgetError);
        EXPECT_GE(dev.stats().used_bytes, 3000u);
    }
    EXPECT_EQ(dev.stats().used_bytes, 0u);
    EXPECT_GE(dev.stats().peak_bytes, 3000u);
    Buffer c = dev.allocate(4096, "c");  // the whole budget is usable again
}

TEST(FakeDevice, RefusesTensorsOutsideItsMemory) {
    FakeDeviceBackend dev({.budget_bytes = 1 << 20});
    std::vector<float> host(64, 1.0f);
    Tensor h = Tensor::contiguous(GgmlType::F32, host.data(), {64});
    Buffer b = dev.allocate(64 * sizeof(float), "x");
    Tensor d = b.tensor(GgmlType::F32, {64});
    EXPECT_THROW(dev.scale(h, 2.0f), ArgumentError);       // host memory
    Tensor spoof = h;
    spoof.memory = MemoryKind::Device;                       // claims device, lies outside the pool
    EXPECT_THROW(dev.scale(spoof, 2.0f), ArgumentError);
    Tensor past = Tensor::contiguous(GgmlType::F32, d.data, {65}, MemoryKind::Device);  // runs past the block
    EXPECT_THROW(dev.scale(past, 2.0f), ArgumentError);
    // The CPU backend refuses device memory in turn.
    cpu::CpuBackend cpu(1);
    EXPECT_THROW(cpu.scale(d, 2.0f), ArgumentError);
}

TEST(FakeDevice, CopiesRoundTripAndAreCounted) {
    FakeDeviceBackend dev({.budget_bytes = 1 << 20});
    std::vector<float> in(96), out(96, 0.0f);
    std::iota(in.begin(), in.end(), 1.0f);
    Buffer b = dev.allocate(in.size() * sizeof(float), "x");
    Tensor d = b.tensor(GgmlType::F32, {32, 3});
    const Tensor src = Tensor::contiguous(GgmlType::F32, in.data(), {32, 3});
    Tensor dst = Tensor::contiguous(GgmlType::F32, out.data(), {32, 3});
    dev.copy_in(src, d);
    dev.scale(d, 2.0f);
    dev.copy_out(d, dst);
    for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], 2.0f * in[i]);
    EXPECT_EQ(dev.stats().bytes_in, 96 * sizeof(float));
    EXPECT_EQ(dev.stats().bytes_out, 96 * sizeof(float));
    EXPECT_EQ(dev.stats().copies_in, 1u);
    EXPECT_EQ(dev.stats().copies_out, 1u);
}

TEST(HostCopy, ColumnSliceOfQuantizedRowsIsGatheredBlockByBlock) {
    // q8_0: 34-byte blocks of 32 elements; rows of 4 blocks, 3 rows.
    const uint64_t block = 34;
    std::vector<uint8_t> bytes(3 * 4 * block);
    std::iota(bytes.begin(), bytes.end(), 0);
    const Tensor w = Tensor::contiguous(GgmlType::Q8_0, bytes.data(), {128, 3});
    const Tensor slice = w.columns(32, 64);  // blocks 1 and 2 of every row
    EXPECT_EQ(slice.ne[0], 64);
    EXPECT_FALSE(slice.is_contiguous());
    std::vector<uint8_t> out(3 * 2 * block);
    Tensor dst = Tensor::contiguous(GgmlType::Q8_0, out.data(), {64, 3});
    copy_host_tensor(slice, dst);
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(std::memcmp(out.data() + r * 2 * block, bytes.data() + (r * 4 + 1) * block, 2 * block), 0) << r;
    }
    EXPECT_THROW(w.columns(16, 32), ArgumentError);   // not on a block boundary
    EXPECT_THROW(w.columns(96, 64), ArgumentError);   // past the row
    Tensor wrong = Tensor::contiguous(GgmlType::Q8_0, out.data(), {32, 3});
    EXPECT_THROW(copy_host_tensor(slice, wrong), ArgumentError);
}

}  // namespace
}  // namespace strata
