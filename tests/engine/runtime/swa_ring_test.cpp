// Sliding-window layers keep a ring of window + batch KV cells (engine/runtime/kv_cache.h): on the
// tiny synthetic Gemma 3 (window 64, 5 of 6 layers sliding), the ring gives the same logits as
// a cache that keeps every position — bit for bit when both are fed the same batches, for
// prompts shorter and longer than the window — and the same greedy continuation; a prompt batch
// longer than the ring's room runs in parts; Session::truncate keeps a prefix across the window
// (re-evaluating when the ring has overwritten it); and the cache holds ring cells only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/session.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

constexpr int64_t kCtx = 512;

class SwaRing : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        file_ = new testing::ScratchFile("swa_ring_tiny_gemma3.gguf");
        SynthOptions options;
        options.preset = "tiny-gemma3";
        options.type = SynthType::Q8_0;
        write_synth_model(options, file_->path());
        model_ = new Model(file_->path());
    }
    static void TearDownTestSuite() {
        delete model_;
        delete file_;
    }
    static std::vector<int32_t> tokens(size_t n, uint32_t seed) {
        std::mt19937 rng(seed);
        std::vector<int32_t> t(n);
        for (auto& x : t) x = 3 + static_cast<int32_t>(rng() % static_cast<uint32_t>(model_->config().n_vocab - 3));
        return t;
    }
    static int32_t argmax(const float* logits, int64_t n) {
        return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
    }

    static testing::ScratchFile* file_;
    static Model* model_;
};
testing::ScratchFile* SwaRing::file_ = nullptr;
Model* SwaRing::model_ = nullptr;

TEST_F(SwaRing, TheModelSlidesAndTheRingHoldsOnlyTheWindow) {
    const ModelConfig& c = model_->config();
    ASSERT_EQ(c.sliding_window, 64);
    const KvCache ring(c, kCtx, GgmlType::F16, {}, 8);
    const KvCache full(c, kCtx, GgmlType::F16, {}, kCtx);
    int sliding = 0;
    for (int il = 0; il < c.n_layer; ++il) {
        sliding += c.is_swa[static_cast<size_t>(il)];
        EXPECT_EQ(ring.cells(il), c.is_swa[static_cast<size_t>(il)] ? 64 + 8 : kCtx) << "layer " << il;
        EXPECT_EQ(full.cells(il), kCtx) << "layer " << il;
    }
    EXPECT_EQ(sliding, 5);
    EXPECT_EQ(ring.max_batch(), 9);  // window - 1 + batch <= cells
    EXPECT_EQ(full.max_batch(), kCtx);
    // 1 full layer + 5 rings of 72 cells, against 6 full layers.
    EXPECT_EQ(ring.bytes() * 6 * kCtx, full.bytes() * (kCtx + 5 * 72));
}

// Both caches fed the same batches: the ring's attention reads the same keys (the kernels'
// chunks count positions), so every logit is bit-identical, before and after the window fills.
TEST_F(SwaRing, SameLogitsBitForBitAsAFullCache) {
    cpu::CpuBackend cpu(2);
    const PlacedModel placed(*model_, cpu);
    LayerProgram program(placed);
    const int64_t n_vocab = program.n_vocab();
    for (int64_t batch : {3, 7}) {
        KvCache ring(model_->config(), kCtx, GgmlType::F16, placed.kv_backends(), batch);
        KvCache full(model_->config(), kCtx, GgmlType::F16, placed.kv_backends(), kCtx);
        const std::vector<int32_t> prompt = tokens(150, 5);  // window 64: wraps the ring twice
        std::vector<float> h_ring, h_full, l_ring(static_cast<size_t>(n_vocab)), l_full(l_ring.size());
        for (size_t b = 0; b < prompt.size(); b += static_cast<size_t>(batch)) {
            const size_t n = std::min(static_cast<size_t>(batch), prompt.size() - b);
            const int32_t last = static_cast<int32_t>(n - 1);
            program.forward({prompt.data() + b, n}, ring, {&last, 1}, h_ring);
            program.forward({prompt.data() + b, n}, full, {&last, 1}, h_full);
            program.logits(h_ring.data(), 1, l_ring.data());
            program.logits(h_full.data(), 1, l_full.data());
            ASSERT_EQ(0, std::memcmp(l_ring.data(), l_full.data(), l_ring.size() * sizeof(float)))
                << "batch " << batch << " at position " << b + n - 1;
        }
    }
}

// What a user sees: greedy continuations through Session (ring: n_batch 16; full: n_batch =
// context) for a prompt inside the window and one past it. The prompt batches differ (16 vs
// one), so logits agree to float rounding and the greedy tokens exactly.
TEST_F(SwaRing, SameGreedyOutputAsAFullCache) {
    cpu::CpuBackend cpu(2);
    for (size_t prompt_len : {40u, 100u}) {
        SessionParams ring_params, full_params;
        ring_params.n_ctx = full_params.n_ctx = kCtx;
        ring_params.n_batch = 16;
        full_params.n_batch = kCtx;
        Session ring(*model_, cpu, ring_params), full(*model_, cpu, full_params);
        ASSERT_LT(ring.kv_cache().bytes(), full.kv_cache().bytes() / 3);
        const std::vector<int32_t> prompt = tokens(prompt_len, 9);
        std::span<const float> lr = ring.feed(prompt), lf = full.feed(prompt);
        double max_diff = 0;
        for (size_t i = 0; i < lr.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(lr[i] - lf[i])));
        EXPECT_LE(max_diff, 2e-3) << "prompt " << prompt_len;
        std::vector<int32_t> out_ring, out_full;
        for (int step = 0; step < 30; ++step) {  // 30 more: the 40-token prompt crosses the window
            out_ring.push_back(argmax(lr.data(), static_cast<int64_t>(lr.size())));
            out_full.push_back(argmax(lf.data(), static_cast<int64_t>(lf.size())));
            if (out_ring.back() != out_full.back()) break;
            lr = ring.feed({&out_ring.back(), 1});
            lf = full.feed({&out_full.back(), 1});
        }
        EXPECT_EQ(out_ring, out_full) << "prompt " << prompt_len;
    }
}

// One forward() of 150 tokens on a ring with room for 9: it runs in parts, the requested rows
// gathered in order, each equal to a batch-by-batch run of the same parts.
TEST_F(SwaRing, ALongBatchRunsInParts) {
    cpu::CpuBackend cpu(2);
    const PlacedModel placed(*model_, cpu);
    LayerProgram program(placed);
    KvCache ring(model_->config(), kCtx, GgmlType::F16, placed.kv_backends(), 8);
    KvCache parts(model_->config(), kCtx, GgmlType::F16, placed.kv_backends(), 8);
    const std::vector<int32_t> prompt = tokens(150, 13);
    const std::vector<int32_t> rows = {149, 3, 77, 0};
    std::vector<float> hidden;
    program.forward(prompt, ring, rows, hidden);
    EXPECT_EQ(ring.n_used(), 150);
    const int64_t n_embd = program.n_embd();
    ASSERT_EQ(hidden.size(), rows.size() * static_cast<size_t>(n_embd));
    std::vector<float> all(static_cast<size_t>(150 * n_embd)), h;
    for (int64_t b = 0; b < 150; b += 9) {
        const int64_t n = std::min<int64_t>(9, 150 - b);
        std::vector<int32_t> local(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) local[static_cast<size_t>(i)] = static_cast<int32_t>(i);
        program.forward({prompt.data() + b, static_cast<size_t>(n)}, parts, local, h);
        std::copy(h.begin(), h.end(), all.begin() + b * n_embd);
    }
    for (size_t j = 0; j < rows.size(); ++j) {
        EXPECT_EQ(0, std::memcmp(hidden.data() + j * n_embd, all.data() + rows[j] * n_embd, n_embd * sizeof(float)))
            << "row " << rows[j];
    }
}

// Rewinding a session: within the ring's room the cache is kept; past it the kept tokens are
// evaluated again. Either way the next logits equal a fresh session's over the same tokens.
TEST_F(SwaRing, TruncateKeepsAPrefixAcrossTheWindow) {
    cpu::CpuBackend cpu(2);
    SessionParams params;
    params.n_ctx = kCtx;
    params.n_batch = 8;
    const std::vector<int32_t> history = tokens(120, 21), next = tokens(12, 22);
    for (int64_t keep : {115, 80, 30}) {  // rewind 5 (inside the room), 40 and 90 (past it)
        Session s(*model_, cpu, params);
        s.feed(history);
        EXPECT_EQ(s.kv_cache().keeps_prefix(keep), keep == 115) << keep;
        s.truncate(keep);
        EXPECT_EQ(s.kv_cache().n_used(), keep);
        ASSERT_EQ(s.tokens(), std::vector<int32_t>(history.begin(), history.begin() + keep));
        std::span<const float> have = s.feed(next);

        Session fresh(*model_, cpu, params);
        fresh.prefill(std::vector<int32_t>(history.begin(), history.begin() + keep));
        std::span<const float> want = fresh.feed(next);
        double max_diff = 0;
        for (size_t i = 0; i < want.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(want[i] - have[i])));
        EXPECT_LE(max_diff, 2e-3) << "keep " << keep;
        EXPECT_EQ(argmax(want.data(), static_cast<int64_t>(want.size())),
                  argmax(have.data(), static_cast<int64_t>(have.size())))
            << "keep " << keep;
    }
}

}  // namespace
}  // namespace strata
