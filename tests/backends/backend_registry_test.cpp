// The registry of built-in backends: names, errors for backends a binary lacks, and what each
// backend says of itself (memory, capabilities) against its own allocations.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "backends/builtin_backends.h"
#include "engine/core/error.h"

namespace strata {
namespace {

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(BackendRegistry, HasCpuAndFakeAndListsThemInErrors) {
    const BackendRegistry& r = builtin_backends();
    ASSERT_NE(r.find("cpu"), nullptr);
    ASSERT_NE(r.find("fake"), nullptr);
    EXPECT_FALSE(r.find("cpu")->is_device);
    EXPECT_TRUE(r.find("fake")->is_device);
    EXPECT_EQ(r.find("vulkan"), nullptr);
    const std::string msg = message_of([&] { r.create("vulkan", {}, "--gpu"); });
    EXPECT_NE(msg.find("--gpu vulkan"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fake"), std::string::npos) << msg;
    EXPECT_THROW(r.get("vulkan", "--gpu"), UnsupportedError);
}

TEST(BackendRegistry, CudaIsAbsentOrSaysWhyItCannotRun) {
    const BackendEntry* cuda = builtin_backends().find("cuda");
    if (cuda == nullptr) GTEST_SKIP() << "built without CUDA";
    const std::string why = cuda->unavailable();
    if (why.empty()) GTEST_SKIP() << "a CUDA device is visible";
    const std::string msg = message_of([] { builtin_backends().create("cuda", {}, "--gpu"); });
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
    EXPECT_NE(msg.find("fake"), std::string::npos) << msg;
}

TEST(BackendRegistry, RefusesADuplicateName) {
    BackendRegistry r;
    BackendEntry e;
    e.name = "x";
    e.create = [](const BackendConfig&) -> std::unique_ptr<Backend> { return nullptr; };
    r.add(e);
    EXPECT_THROW(r.add(e), ArgumentError);
}

TEST(BackendMemory, FakeCountsItsAllocationsInsideItsBudget) {
    const std::unique_ptr<Backend> fake = builtin_backends().create("fake", {.budget_bytes = 3u << 20}, "--gpu");
    EXPECT_EQ(fake->name(), "fake");
    EXPECT_EQ(fake->memory().limit_bytes, 3u << 20);
    EXPECT_EQ(fake->memory().budget_bytes, 3u << 20);
    {
        Buffer a = fake->allocate(1000000, "a");
        const BackendMemory m = fake->memory();
        EXPECT_GE(m.used_bytes, 1000000u);
        EXPECT_EQ(m.allocatable_bytes(), m.limit_bytes - m.used_bytes);
        EXPECT_EQ(m.free_bytes, m.total_bytes - m.used_bytes);
    }
    EXPECT_EQ(fake->memory().used_bytes, 0u);
    EXPECT_GE(fake->memory().peak_bytes, 1000000u);
}

TEST(BackendMemory, CpuCountsItsAllocationsWithoutALimit) {
    const std::unique_ptr<Backend> cpu = builtin_backends().create("cpu", {.n_threads = 2}, "--cpu");
    const uint64_t before = cpu->memory().used_bytes;
    Buffer a = cpu->allocate(123456, "a");
    const BackendMemory m = cpu->memory();
    EXPECT_GE(m.used_bytes - before, 123456u);
    EXPECT_EQ(m.limit_bytes, 0u);
    EXPECT_EQ(m.allocatable_bytes(), 0u);
    EXPECT_GT(m.total_bytes, m.used_bytes);
    EXPECT_EQ(cpu->capabilities().host_threads, 2);
}

TEST(BackendCapabilities, SayWhatEachBackendRuns) {
    const std::unique_ptr<Backend> cpu = builtin_backends().create("cpu", {}, "--cpu");
    const std::unique_ptr<Backend> fake = builtin_backends().create("fake", {}, "--gpu");
    const BackendCapabilities& c = cpu->capabilities();
    EXPECT_TRUE(c.sparse_ffn);
    EXPECT_FALSE(c.step_graphs);
    EXPECT_TRUE(c.runs_weight_type(GgmlType::Q4_K));
    EXPECT_TRUE(c.runs_weight_type(GgmlType::F16));
    EXPECT_FALSE(c.runs_weight_type(GgmlType::I32));  // no reference dequantizer
    const BackendCapabilities& f = fake->capabilities();
    EXPECT_EQ(f.device_name, "fake-gpu");
    EXPECT_TRUE(f.sparse_ffn);  // as CUDA's
    EXPECT_FALSE(f.step_graphs);
    EXPECT_EQ(f.weight_types, c.weight_types);
    EXPECT_EQ(f.host_threads, 0);
    // Optional ops a backend lacks say so instead of misbehaving.
    EXPECT_THROW(fake->begin_step_graph(nullptr, nullptr, nullptr), UnsupportedError);
    EXPECT_THROW(fake->replay_step(nullptr, 0, 0), UnsupportedError);
    SparseFfnArgs args;
    Tensor y;
    EXPECT_THROW(fake->sparse_gated_ffn(args, y), ArgumentError);  // null tensors
}

}  // namespace
}  // namespace strata
