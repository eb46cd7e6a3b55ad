// The real default model (Gemma 3 270M: window 512, 15 of 18 layers sliding) with sliding-window
// KV rings against a cache that keeps every position: the same greedy continuation for a prompt
// shorter than the window and one longer, and a cache under a quarter of the full one's bytes at
// 32k context. Needs STRATA_DEFAULT_MODEL (scripts/test.sh sets it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/placed_model.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "kernels_cpu/cpu_backend.h"

namespace strata {
namespace {

class SwaDefaultModel : public ::testing::Test {
  protected:
    void SetUp() override {
        const char* path = std::getenv("STRATA_DEFAULT_MODEL");
        if (path == nullptr) GTEST_SKIP() << "STRATA_DEFAULT_MODEL is not set (scripts/test.sh sets it)";
        model_ = std::make_unique<Model>(path);
    }
    std::unique_ptr<Model> model_;
};

TEST_F(SwaDefaultModel, KvAt32kIsUnderAQuarterOfTheFullCache) {
    const ModelConfig& c = model_->config();
    ASSERT_EQ(c.sliding_window, 512);
    const int64_t n_ctx = std::min<int64_t>(32768, c.n_ctx_train);
    // As a session of the default batch (256) holds them; the full cache as before the rings.
    const KvCache ring(c, n_ctx, GgmlType::F16, {}, SessionParams{}.n_batch);
    const KvCache full(c, n_ctx, GgmlType::F16, {}, n_ctx);
    std::printf("[ swa      ] KV at %lld context: %.2f MiB with rings, %.2f MiB full\n", static_cast<long long>(n_ctx),
                static_cast<double>(ring.bytes()) / (1 << 20), static_cast<double>(full.bytes()) / (1 << 20));
    EXPECT_LE(ring.bytes() * 4, full.bytes());
}

// Greedy decoding with rings (room for a batch of 64) against full caches, both fed the same
// batches of 64: logits bit-identical at every step, so the same tokens, for a prompt inside the
// window and one that wraps the rings.
TEST_F(SwaDefaultModel, SameGreedyOutputAsAFullCache) {
    cpu::CpuBackend cpu(2);
    const PlacedModel placed(*model_, cpu);
    LayerProgram program(placed);
    const int64_t n_vocab = program.n_vocab();
    std::mt19937 rng(3);
    for (size_t prompt_len : {100u, 700u}) {
        KvCache ring(model_->config(), 1024, GgmlType::F16, placed.kv_backends(), 64);
        KvCache full(model_->config(), 1024, GgmlType::F16, placed.kv_backends(), 1024);
        std::vector<int32_t> prompt(prompt_len);
        prompt[0] = 2;  // <bos>, then ordinary ids past the control tokens
        for (size_t i = 1; i < prompt_len; ++i) prompt[i] = 1000 + static_cast<int32_t>(rng() % 20000);
        std::vector<float> h_ring, h_full, l_ring(static_cast<size_t>(n_vocab)), l_full(l_ring.size());
        std::vector<int32_t> out_ring, out_full;
        std::vector<int32_t> feed = prompt;
        for (int step = 0; step < 24; ++step) {
            for (size_t b = 0; b < feed.size(); b += 64) {
                const size_t n = std::min<size_t>(64, feed.size() - b);
                const int32_t last = static_cast<int32_t>(n - 1);
                program.forward({feed.data() + b, n}, ring, {&last, 1}, h_ring);
                program.forward({feed.data() + b, n}, full, {&last, 1}, h_full);
            }
            program.logits(h_ring.data(), 1, l_ring.data());
            program.logits(h_full.data(), 1, l_full.data());
            ASSERT_EQ(0, std::memcmp(l_ring.data(), l_full.data(), l_ring.size() * sizeof(float)))
                << "prompt " << prompt_len << " step " << step;
            out_ring.push_back(static_cast<int32_t>(std::max_element(l_ring.begin(), l_ring.end()) - l_ring.begin()));
            out_full.push_back(static_cast<int32_t>(std::max_element(l_full.begin(), l_full.end()) - l_full.begin()));
            feed = {out_ring.back()};
        }
        EXPECT_EQ(out_ring, out_full) << "prompt " << prompt_len;
    }
}

}  // namespace
}  // namespace strata
