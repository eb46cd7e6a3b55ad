// Hot neurons on the GPU, cold on the CPU, on synthetic models: with the hot range thresholded
// (a host backend computes it) the split FFN gives the unsplit SparseFfn's logits (same mask);
// on the fake device (dense hot range) all-hot gives the dense model and a partial split gives
// the same function as the host-computed dense hot range, with one transfer in and one out per
// layer and step and the device's budget honoured; the column gather against dequantized
// columns; bad hot counts refused.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/fake_device.h"
#include "engine/core/error.h"
#include "engine/runtime/hot_cold_ffn.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/profile_run.h"
#include "engine/runtime/session.h"
#include "engine/runtime/sparse_ffn.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "offload/placement.h"
#include "tests/engine/synth/scratch_file.h"
#include "tests/engine/runtime/rel_diff.h"

namespace strata {
namespace {

std::vector<int32_t> random_tokens(size_t n, int32_t n_vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    return t;
}

struct RunResult {
    std::vector<float> logits;
    double achieved = 0;
};

RunResult run(const PlacedModel& placed, const SparseFfn* sparse, const HotColdFfn* hc, const std::vector<int32_t>& tokens,
        int64_t n_batch) {
    SessionParams params;
    params.n_ctx = 64;
    params.n_batch = n_batch;
    params.sparse = sparse;
    params.hot_cold = hc;
    Session session(placed, params);
    std::span<const float> logits;
    for (size_t i = 0; i < tokens.size(); i += static_cast<size_t>(n_batch)) {
        logits = session.feed({tokens.data() + i, std::min(tokens.size() - i, static_cast<size_t>(n_batch))});
    }
    RunResult r{{logits.begin(), logits.end()}, 0};
    uint64_t e = 0, a = 0;
    for (const auto& c : session.program().sparsity_counts()) e += c.evaluated, a += c.active;
    r.achieved = e > 0 ? 1.0 - static_cast<double>(a) / static_cast<double>(e) : 0;
    return r;
}

using testing::rel_max_diff;

// Attention and KV on the GPU tier, everything else in RAM.
Placement attention_on_gpu(const Model& model) {
    Placement p;
    p.model = model_fingerprint(model);
    p.n_ctx = 64;
    for (const TensorEntry& t : tensor_table(model).tensors) {
        p.tensors.push_back({t.name, t.name.find(".attn_") != std::string::npos ? Tier::Gpu : Tier::Ram});
    }
    p.kv.assign(static_cast<size_t>(model.config().n_layer), Tier::Gpu);
    return p;
}

class HotColdFfnTest : public ::testing::TestWithParam<const char*> {
  protected:
    struct Fixture {
        explicit Fixture(const std::string& preset) : file("hot_cold_ffn_test_" + preset + ".gguf") {}
        testing::ScratchFile file;
        std::unique_ptr<Model> model;
        ActivationProfile profile;
    };
    void SetUp() override {
        static std::map<std::string, std::unique_ptr<Fixture>> fixtures;
        std::unique_ptr<Fixture>& f = fixtures[GetParam()];
        if (!f) {
            f = std::make_unique<Fixture>(GetParam());
            SynthOptions o;
            o.preset = GetParam();
            write_synth_model(o, f->file.path());
            f->model = std::make_unique<Model>(f->file.path());
            ProfileParams pp;
            pp.n_ctx = 32;
            pp.n_batch = 32;
            f->profile = profile_activations(*f->model, cpu_, random_tokens(128, 512, 11), pp);
        }
        model_ = f->model.get();
        profile_ = &f->profile;
        n_ff_ = model_->weights().layers[0].ffn_gate.ne[1];
    }
    // Hot counts per layer: a mix of none, some and all.
    std::vector<int64_t> mixed_hot() const {
        std::vector<int64_t> hot;
        for (int il = 0; il < model_->config().n_layer; ++il) {
            hot.push_back(il % 3 == 0 ? 0 : il % 3 == 1 ? (n_ff_ / 3) / 32 * 32 : n_ff_);
        }
        return hot;
    }
    cpu::CpuBackend cpu_{2};
    cpu::CpuBackend cpu_f32_{cpu::CpuBackendOptions{.n_threads = 2, .quantize_activations = false}};
    Model* model_ = nullptr;
    const ActivationProfile* profile_ = nullptr;
    int64_t n_ff_ = 0;
};

// With the neuron-major copy in every layer, and with none (the cold part's ffn_down read whole,
// as the plain sparse decode reads it).
TEST_P(HotColdFfnTest, ThresholdedHotRangeMatchesTheUnsplitSparseFfn) {
    const PlacedModel placed(*model_, cpu_f32_);
    for (const SparseDownPolicy& down : {copy_every_layer(GgmlType::F32), SparseDownPolicy{SparseDownMode::Whole}}) {
        const SparseFfn sparse(placed, *profile_, 0.5, down);
        ASSERT_EQ(sparse.has_copy(0), down.mode != SparseDownMode::Whole);
        const auto prompt = random_tokens(10, 512, 5);
        for (int64_t n_batch : {1, 5}) {
            const RunResult ref = run(placed, &sparse, nullptr, prompt, n_batch);
            for (const auto& hot : {std::vector<int64_t>(static_cast<size_t>(model_->config().n_layer), 0), mixed_hot()}) {
                const HotColdFfn hc(placed, sparse, *profile_, {hot, &cpu_f32_, GgmlType::F32, true});
                ASSERT_TRUE(hc.masks_hot());
                const RunResult got = run(placed, &sparse, &hc, prompt, n_batch);
                EXPECT_LT(rel_max_diff(got.logits, ref.logits), 1e-4) << "n_batch " << n_batch;
                EXPECT_NEAR(got.achieved, ref.achieved, 1e-3);
                EXPECT_GT(got.achieved, 0.3);
            }
        }
    }
}

TEST_P(HotColdFfnTest, FakeDeviceDenseHotRange) {
    const Placement p = attention_on_gpu(*model_);
    FakeDeviceBackend fake(FakeDeviceOptions{.budget_bytes = 64ull << 20, .n_threads = 1, .quantize_activations = false});
    const PlacedModel placed(*model_, p, TierBackends{.cpu = &cpu_f32_, .gpu = &fake});
    const SparseFfn sparse(placed, *profile_, 0.5, copy_every_layer(GgmlType::F32));
    const auto prompt = random_tokens(6, 512, 9);
    const int n_layer = model_->config().n_layer;
    // All hot and dense: the dense model.
    {
        const HotColdFfn all(placed, sparse, *profile_,
                             {std::vector<int64_t>(static_cast<size_t>(n_layer), n_ff_), &fake, GgmlType::F32, false});
        EXPECT_FALSE(all.masks_hot());  // the hot range computed dense, as asked
        const PlacedModel dense(*model_, p, TierBackends{.cpu = &cpu_f32_, .gpu = &fake});
        const RunResult ref = run(dense, nullptr, nullptr, prompt, 1);
        const RunResult got = run(placed, &sparse, &all, prompt, 1);
        EXPECT_LT(rel_max_diff(got.logits, ref.logits), 1e-4);
        EXPECT_NEAR(got.achieved, 0.0, 1e-12);
    }
    // A partial split on the device = the same split computed on the host, with one transfer of
    // the input and one of the partial output per split layer and token.
    const std::vector<int64_t> hot = mixed_hot();
    const uint64_t before = fake.stats().used_bytes;
    // Both hot ranges dense (the fake device has the thresholded op too; masking is covered above).
    const HotColdFfn on_device(placed, sparse, *profile_, {hot, &fake, GgmlType::F32, false});
    EXPECT_EQ(fake.stats().used_bytes - before, on_device.hot_bytes());
    const PlacedModel host_placed(*model_, cpu_f32_);
    const SparseFfn host_sparse(host_placed, *profile_, 0.5, copy_every_layer(GgmlType::F32));
    const HotColdFfn on_host(host_placed, host_sparse, *profile_, {hot, &cpu_f32_, GgmlType::F32, false});
    const RunResult ref = run(host_placed, &host_sparse, &on_host, prompt, 1);
    SessionParams params;
    params.n_ctx = 64;
    params.n_batch = 1;
    params.sparse = &sparse;
    params.hot_cold = &on_device;
    Session session(placed, params);
    session.feed({prompt.data(), 5});
    const FakeDeviceStats s0 = fake.stats();
    const auto last = session.feed({prompt.data() + 5, 1});
    const FakeDeviceStats s1 = fake.stats();
    EXPECT_LT(rel_max_diff({last.begin(), last.end()}, ref.logits), 1e-4);
    int split = 0;
    for (int64_t h : hot) split += h > 0 ? 1 : 0;
    // Attention moves the residual to the GPU and back each layer too: count the FFN's beyond it
    // by a run without hot neurons.
    const HotColdFfn none(placed, sparse, *profile_, {std::vector<int64_t>(static_cast<size_t>(n_layer), 0), &fake,
                                                      GgmlType::F32, true});
    params.hot_cold = &none;
    Session base(placed, params);
    base.feed({prompt.data(), 5});
    const FakeDeviceStats b0 = fake.stats();
    base.feed({prompt.data() + 5, 1});
    const FakeDeviceStats b1 = fake.stats();
    EXPECT_EQ((s1.copies_in - s0.copies_in) - (b1.copies_in - b0.copies_in), static_cast<uint64_t>(split));
    EXPECT_EQ((s1.copies_out - s0.copies_out) - (b1.copies_out - b0.copies_out), static_cast<uint64_t>(split));
}

// Thresholded on the device in decode: the hot range's active up rows and its counts stay on the
// device (no wait for the count); the function and the achieved sparsity are the unsplit
// SparseFfn's.
TEST_P(HotColdFfnTest, DeviceThresholdedHotRangeCountsOnTheDevice) {
    const Placement p = attention_on_gpu(*model_);
    FakeDeviceBackend fake(FakeDeviceOptions{.budget_bytes = 64ull << 20, .n_threads = 1, .quantize_activations = false});
    const PlacedModel placed(*model_, p, TierBackends{.cpu = &cpu_f32_, .gpu = &fake});
    const SparseFfn sparse(placed, *profile_, 0.5, copy_every_layer(GgmlType::F32));
    const auto prompt = random_tokens(8, 512, 13);
    const RunResult ref = run(placed, &sparse, nullptr, prompt, 1);
    const HotColdFfn hc(placed, sparse, *profile_, {mixed_hot(), &fake, GgmlType::F32, true});
    ASSERT_TRUE(hc.masks_hot());
    const RunResult got = run(placed, &sparse, &hc, prompt, 1);
    EXPECT_LT(rel_max_diff(got.logits, ref.logits), 1e-4);
    EXPECT_NEAR(got.achieved, ref.achieved, 1e-3);
    EXPECT_GT(got.achieved, 0.3);
}

TEST_P(HotColdFfnTest, BudgetIsHonouredAndBadCountsRefused) {
    const Placement p = attention_on_gpu(*model_);
    const int n_layer = model_->config().n_layer;
    const std::vector<int64_t> all(static_cast<size_t>(n_layer), n_ff_);
    // Bytes of the placement and of every neuron hot, on a large device.
    FakeDeviceBackend big(FakeDeviceOptions{.budget_bytes = 256ull << 20, .n_threads = 1});
    const PlacedModel placed_big(*model_, p, TierBackends{.cpu = &cpu_, .gpu = &big});
    const uint64_t placed_bytes = big.stats().used_bytes;
    const SparseFfn sparse_big(placed_big, *profile_, 0.5);
    const uint64_t all_bytes = HotColdFfn(placed_big, sparse_big, *profile_, {all, &big}).hot_bytes();
    const uint64_t expected = [&] {
        double b = 0;
        for (const NeuronBytes& nb : hot_cold_neuron_bytes(*model_, GgmlType::Q8_0, GgmlType::Q8_0)) {
            b += nb.gpu_resident() * static_cast<double>(n_ff_);
        }
        return static_cast<uint64_t>(b);
    }();
    EXPECT_EQ(all_bytes, expected);  // the chooser's bytes are what the copies take

    // A device with room for the placement and half of them: all hot is refused, the chosen
    // counts fit, and a decode step runs within the budget.
    const uint64_t budget = placed_bytes + all_bytes / 2;
    FakeDeviceBackend small(FakeDeviceOptions{.budget_bytes = budget, .n_threads = 1});
    const PlacedModel placed(*model_, p, TierBackends{.cpu = &cpu_, .gpu = &small});
    const SparseFfn sparse(placed, *profile_, 0.5);
    EXPECT_THROW(HotColdFfn(placed, sparse, *profile_, {all, &small}), BudgetError);
    HotNeuronRequest req;
    req.sparsity = 0.5;
    req.gpu_bytes = (budget - small.stats().used_bytes) * 3 / 4;  // room for the step's activations
    req.granule = 32;
    const std::vector<int64_t> hot = choose_hot_neurons(*model_, *profile_, req);
    int64_t total = 0;
    for (int64_t h : hot) total += h;
    EXPECT_GT(total, 0);
    EXPECT_LT(total, n_ff_ * n_layer);
    const HotColdFfn fits(placed, sparse, *profile_, {hot, &small});
    EXPECT_LE(static_cast<double>(fits.hot_bytes()), static_cast<double>(req.gpu_bytes));
    SessionParams params;
    params.n_ctx = 64;
    params.n_batch = 1;
    params.sparse = &sparse;
    params.hot_cold = &fits;
    Session session(placed, params);
    session.feed(random_tokens(3, 512, 2));
    EXPECT_LE(small.stats().peak_bytes, budget);

    std::vector<int64_t> bad(static_cast<size_t>(n_layer), 0);
    bad[0] = 33;
    EXPECT_THROW(HotColdFfn(placed, sparse, *profile_, {bad, &small}), ArgumentError);
    bad[0] = n_ff_ + 32;
    EXPECT_THROW(HotColdFfn(placed, sparse, *profile_, {bad, &small}), ArgumentError);
    EXPECT_THROW(HotColdFfn(placed, sparse, *profile_, {std::vector<int64_t>(1, 0), &small}), ArgumentError);
    bad[0] = 0;
    FakeDeviceBackend other(FakeDeviceOptions{.budget_bytes = 8ull << 20});
    EXPECT_THROW(HotColdFfn(placed, sparse, *profile_, {bad, &other}), UnsupportedError);
}

INSTANTIATE_TEST_SUITE_P(Archs, HotColdFfnTest, ::testing::Values("tiny", "tiny-gemma3"));

TEST(HotColdGather, ColumnsMatchDequantizedColumns) {
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    const int64_t ne0 = 96, ne1 = 5;
    std::vector<float> src(static_cast<size_t>(ne0 * ne1));
    for (auto& v : src) v = nd(rng);
    Tensor s = Tensor::contiguous(GgmlType::F32, src.data(), {ne0, ne1});
    const std::vector<int32_t> cols{95, 0, 17, 3};
    std::vector<float> out(cols.size() * ne1);
    Tensor d = Tensor::contiguous(GgmlType::F32, out.data(), {4, ne1});
    gather_columns(s, cols, d);
    for (int64_t r = 0; r < ne1; ++r) {
        for (size_t j = 0; j < cols.size(); ++j) EXPECT_EQ(out[r * 4 + j], src[r * ne0 + cols[j]]);
    }
    std::vector<float> rows(2 * ne0);
    Tensor g = Tensor::contiguous(GgmlType::F32, rows.data(), {ne0, 2});
    gather_rows(s, {4, 1}, g);
    for (int64_t i = 0; i < ne0; ++i) {
        EXPECT_EQ(rows[i], src[4 * ne0 + i]);
        EXPECT_EQ(rows[ne0 + i], src[ne0 + i]);
    }
    EXPECT_THROW(gather_rows(s, {5}, g), ArgumentError);
    std::vector<uint8_t> q8(row_bytes(GgmlType::Q8_0, 32) * ne1);
    Tensor q = Tensor::contiguous(GgmlType::Q8_0, q8.data(), {32, ne1});
    EXPECT_THROW(gather_columns(s, cols, q), ArgumentError);  // 4 columns into rows of 32
}

}  // namespace
}  // namespace strata
