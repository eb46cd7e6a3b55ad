// The fake device: budget, memory checks and transfer counts — and the host-copy helpers it
// builds on (Tensor::columns, copy_host_tensor), against hand-computed layouts.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/sparse_scratch.h"
#include "kernels_cpu/cpu_backend.h"
#include "backends/fake_device.h"
#include "tests/kernels_cpu/test_util.h"

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

// Step graphs (FakeDeviceOptions::step_graphs): a recorded get_rows of the step's token and a
// scale replay with another token; a host copy while recording is refused; a recording that
// names a freed buffer fails at its replay; a part never recorded is not replayed.
TEST(FakeDevice, StepGraphsReplayWithTheSlotsValues) {
    FakeDeviceBackend dev({.budget_bytes = 1 << 20, .step_graphs = true});
    EXPECT_TRUE(dev.capabilities().step_graphs);
    std::vector<float> table(4 * 8);
    std::iota(table.begin(), table.end(), 0.0f);  // row r holds 8r .. 8r+7
    Buffer tb = dev.allocate(table.size() * sizeof(float), "table");
    Tensor t = tb.tensor(GgmlType::F32, {8, 4});
    dev.copy_in(Tensor::contiguous(GgmlType::F32, table.data(), {8, 4}), t);
    auto row = std::make_unique<Buffer>(dev.allocate(8 * sizeof(float), "row"));
    Tensor r = row->tensor(GgmlType::F32, {8, 1});
    std::vector<float> out(8);
    Tensor host_out = Tensor::contiguous(GgmlType::F32, out.data(), {8, 1});

    int32_t token = 1, position = 0;
    const int owner = 0;
    EXPECT_FALSE(dev.replay_step({&owner, 1}, token, position)) << "nothing recorded yet";
    dev.begin_step_graph({&owner, 1}, &token, &position);
    dev.get_rows(t, &token, 1, r);
    dev.scale(r, 2.0f);
    EXPECT_THROW(dev.copy_out(r, host_out), ArgumentError) << "a host copy cannot be recorded";
    dev.end_graph();
    dev.copy_out(r, host_out);
    EXPECT_EQ(out[0], 16.0f);  // ran at once: row 1 doubled

    ASSERT_TRUE(dev.replay_step({&owner, 1}, 3, 1));
    dev.copy_out(r, host_out);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], 2.0f * static_cast<float>(24 + i));
    EXPECT_EQ(dev.stats().graph_launches, 2u);
    EXPECT_FALSE(dev.replay_step({&owner, 2}, 3, 1)) << "part 2 was never recorded";

    row.reset();  // the recording names a freed buffer now
    EXPECT_THROW(dev.replay_step({&owner, 1}, 2, 2), ArgumentError);
}

TEST(FakeDevice, StepGraphsOnlyWhenAsked) {
    FakeDeviceBackend dev({.budget_bytes = 1 << 20});
    EXPECT_FALSE(dev.capabilities().step_graphs);
    int32_t token = 0, position = 0;
    EXPECT_THROW(dev.begin_step_graph(&dev, &token, &position), UnsupportedError);
    EXPECT_THROW(dev.replay_step(&dev, 0, 0), UnsupportedError);
}

// A device copy of random f32 values quantized to `type` [k, n] (quant/'s reference quantizer).
Buffer device_weights(FakeDeviceBackend& dev, GgmlType type, int64_t k, int64_t n, uint32_t seed, Tensor& out) {
    std::vector<float> f(static_cast<size_t>(k * n));
    for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>((i * 2654435761u + seed) % 2001) / 1000.0f - 1.0f;
    Tensor host = Tensor::contiguous(type, nullptr, {k, n});
    std::vector<uint8_t> bytes(host.n_bytes());
    host.data = bytes.data();
    for (int64_t r = 0; r < n; ++r) type_traits(type).quantize(f.data() + r * k, bytes.data() + r * host.nb[1], k);
    Buffer b = dev.allocate(host.n_bytes(), "w");
    out = b.tensor(type, {k, n});
    dev.copy_in(host, out);
    return b;
}

// routed_expert_ffn is recorded in step graphs and picks its experts at each replay from the
// logits then in device memory, as CUDA's op reads the ids its routing kernel wrote: a replay
// after the logits changed takes other experts. Each result equals the CPU's op on the same
// inputs. f16 experts are refused, as CUDA refuses them (no integer GEMV).
TEST(FakeDevice, RoutedExpertsChooseFromTheLogitsAtEachReplay) {
    using cpu::test::HostTensor;
    FakeDeviceBackend dev({.budget_bytes = 8 << 20, .step_graphs = true});
    cpu::CpuBackend cpu(1);
    const int64_t n_embd = 64, width = 64, n_expert = 6, k = 2;
    std::vector<HostTensor> host;
    for (int64_t e = 0; e < 3 * n_expert; ++e) {
        host.push_back(e % 3 == 2 ? cpu::test::random_weights(GgmlType::Q8_0, width, n_embd)
                                  : cpu::test::random_weights(GgmlType::Q8_0, n_embd, width));
    }
    std::vector<Buffer> buffers;
    auto put = [&](const Tensor& t) {
        buffers.push_back(dev.allocate(t.n_bytes(), "test"));
        Tensor d = buffers.back().tensor(t.type, {t.ne[0], t.ne[1]});
        dev.copy_in(t, d);
        return d;
    };
    std::vector<Tensor> mats;
    for (const HostTensor& h : host) mats.push_back(put(h.t));
    std::vector<ExpertRef> on_dev, on_host;
    for (size_t j = 0; j < mats.size(); j += 3) {
        on_dev.push_back({&mats[j], &mats[j + 1], &mats[j + 2], 0.0f});
        on_host.push_back({&host[j].t, &host[j + 1].t, &host[j + 2].t, 0.0f});
    }
    ASSERT_TRUE(dev.routes_experts(on_dev, k, Activation::Silu));
    const HostTensor x = cpu::test::random_f32({n_embd, 1});
    HostTensor first = cpu::test::random_f32({n_expert, 1}), second = first;
    first.f32()[0] = first.f32()[1] = 5.0f;    // experts 0 and 1
    second.f32()[4] = second.f32()[5] = 5.0f;  // experts 4 and 5
    const Tensor xd = put(x.t);
    Tensor logits = put(first.t);
    Tensor y = put(cpu::test::random_f32({n_embd, 1}).t);
    const ExpertTopK top_k{k, true, 1.0f};
    auto expected = [&](const HostTensor& l) {
        HostTensor out = cpu::test::random_f32({n_embd, 1});
        cpu.routed_expert_ffn({&x.t, &l.t, on_host, top_k, Activation::Silu}, out.t);
        return std::vector<float>(out.f32(), out.f32() + n_embd);
    };
    auto read = [&] {
        std::vector<float> v(static_cast<size_t>(n_embd));
        Tensor h = Tensor::contiguous(GgmlType::F32, v.data(), {n_embd, 1});
        dev.copy_out(y, h);
        return v;
    };
    int owner = 0;
    const int32_t token = 1, position = 0;
    dev.begin_step_graph({&owner, 1}, &token, &position);
    dev.routed_expert_ffn({&xd, &logits, on_dev, top_k, Activation::Silu}, y);
    dev.end_graph();
    const std::vector<float> want_first = expected(first), want_second = expected(second);
    EXPECT_EQ(read(), want_first);
    dev.copy_in(second.t, logits);
    ASSERT_TRUE(dev.replay_step({&owner, 1}, token, 1));
    EXPECT_EQ(read(), want_second);
    EXPECT_NE(want_first, want_second);

    const HostTensor h16 = cpu::test::random_weights(GgmlType::F16, n_embd, width);
    const HostTensor d16 = cpu::test::random_weights(GgmlType::F16, width, n_embd);
    const std::vector<ExpertRef> f16(static_cast<size_t>(n_expert), ExpertRef{&h16.t, &h16.t, &d16.t, 0.0f});
    EXPECT_FALSE(dev.routes_experts(f16, k, Activation::Silu));
}

TEST(FakeDevice, SparseFfnHoldsTheCudaScratchAndCountsInItsMemory) {
    const int64_t n_embd = 64, n_ff = 96;
    FakeDeviceBackend dev({.budget_bytes = 1 << 20});
    Tensor up, down_t;
    Buffer ub = device_weights(dev, GgmlType::Q8_0, n_embd, n_ff, 1, up);
    Buffer db = device_weights(dev, GgmlType::Q8_0, n_embd, n_ff, 2, down_t);
    std::vector<float> g(n_ff), x(n_embd);
    for (int64_t i = 0; i < n_ff; ++i) g[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 61) / 10.0f - 3.0f;
    for (int64_t i = 0; i < n_embd; ++i) x[static_cast<size_t>(i)] = static_cast<float>((i * 11) % 17) / 8.0f - 1.0f;
    Buffer gb = dev.allocate(n_ff * sizeof(float), "gate"), xb = dev.allocate(n_embd * sizeof(float), "x");
    Buffer yb = dev.allocate(n_embd * sizeof(float), "y"), cb = dev.allocate(2 * sizeof(uint64_t), "counts");
    Tensor gate = gb.tensor(GgmlType::F32, {n_ff, 1}), xd = xb.tensor(GgmlType::F32, {n_embd, 1});
    Tensor y = yb.tensor(GgmlType::F32, {n_embd, 1});
    dev.copy_in(Tensor::contiguous(GgmlType::F32, g.data(), {n_ff, 1}), gate);
    dev.copy_in(Tensor::contiguous(GgmlType::F32, x.data(), {n_embd, 1}), xd);
    std::memset(cb.data(), 0, 2 * sizeof(uint64_t));

    const uint64_t before = dev.stats().used_bytes;
    SparseFfnArgs args{&gate, &xd, &up, &down_t, Activation::Silu, 0.4f};
    args.counts = static_cast<uint64_t*>(cb.data());
    const int64_t active = dev.sparse_gated_ffn(args, y);
    EXPECT_GT(active, 0);
    EXPECT_LT(active, n_ff);
    // The same op on the CPU backend over the same bytes seen as host memory.
    auto host = [](Tensor t) { t.memory = MemoryKind::Host; return t; };
    const Tensor hg = host(gate), hx = host(xd), hu = host(up), hd = host(down_t);
    std::vector<float> ref(n_embd);
    Tensor hy = Tensor::contiguous(GgmlType::F32, ref.data(), {n_embd, 1});
    cpu::CpuBackend cpu(1);
    EXPECT_EQ(cpu.sparse_gated_ffn(SparseFfnArgs{&hg, &hx, &hu, &hd, Activation::Silu, 0.4f}, hy), active);
    EXPECT_EQ(std::memcmp(ref.data(), yb.data(), ref.size() * sizeof(float)), 0);
    const uint64_t* counts = static_cast<const uint64_t*>(cb.data());
    EXPECT_EQ(counts[0], static_cast<uint64_t>(n_ff));
    EXPECT_EQ(counts[1], static_cast<uint64_t>(active));
    // The CUDA backend's blocks: the sparse scratch and the q8 activations of one row of x
    // (kernels_cuda/backend_matmul.cpp's q8_scratch), each rounded to the pool's 256 bytes.
    auto round = [](uint64_t b) { return (b + 255) / 256 * 256; };
    const uint64_t q8 = (n_embd + 15) / 16 * 16 + (n_embd / 32) * 2 * sizeof(float);
    EXPECT_EQ(dev.stats().used_bytes - before, round(sparse_scratch_layout(n_ff, n_embd).total) + round(q8));
    // Counts given in host memory are refused, as the CUDA backend refuses them.
    uint64_t host_counts[2] = {0, 0};
    args.counts = host_counts;
    EXPECT_THROW(dev.sparse_gated_ffn(args, y), ArgumentError);
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
