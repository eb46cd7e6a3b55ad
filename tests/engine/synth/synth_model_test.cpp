// The synthetic writer: deterministic for a seed, streams with progress up to the planned
// size, fails cleanly (no partial file) on bad options or an unwritable path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/synth/synth_model.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata::testing {
namespace {

std::string synth_bytes(const SynthOptions& options) {
    std::ostringstream out;
    write_synth_model(options, out);
    return out.str();
}

TEST(SynthModel, SameSeedSameBytes) {
    for (const char* preset : {"tiny", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3"}) {
        SynthOptions o;
        o.preset = preset;
        o.seed = 1234;
        EXPECT_EQ(synth_bytes(o), synth_bytes(o)) << preset;
    }
}

TEST(SynthModel, OtherSeedOtherWeightsSameLayout) {
    SynthOptions a, b;
    b.seed = a.seed + 1;
    std::string fa = synth_bytes(a), fb = synth_bytes(b);
    ASSERT_EQ(fa.size(), fb.size());
    GgufFile ga = GgufFile::from_memory(reinterpret_cast<const uint8_t*>(fa.data()), fa.size());
    GgufFile gb = GgufFile::from_memory(reinterpret_cast<const uint8_t*>(fb.data()), fb.size());
    ASSERT_EQ(ga.tensors().size(), gb.tensors().size());
    for (size_t i = 0; i < ga.tensors().size(); ++i) {
        const TensorInfo& ta = ga.tensors()[i];
        const TensorInfo& tb = gb.tensors()[i];
        EXPECT_EQ(ta.name, tb.name);
        EXPECT_EQ(ta.offset, tb.offset);
        bool same = std::equal(ta.data, ta.data + ta.n_bytes, tb.data);
        bool constant = ta.name.find("norm") != std::string::npos;  // F32 norms differ too
        EXPECT_FALSE(same && !constant) << ta.name;
    }
}

TEST(SynthModel, ProgressReachesThePlannedTotal) {
    SynthOptions o;
    o.preset = "tiny-gemma3";
    SynthPlan plan = plan_synth_model(o);
    uint64_t last = 0;
    int calls = 0;
    o.on_progress = [&](const SynthProgress& p) {
        EXPECT_GE(p.bytes_done, last);
        EXPECT_EQ(p.bytes_total, plan.tensor_bytes);
        last = p.bytes_done;
        ++calls;
    };
    std::string bytes = synth_bytes(o);
    EXPECT_EQ(last, plan.tensor_bytes);
    EXPECT_GE(calls, static_cast<int>(plan.tensors.size()));
    GgufFile g =
        GgufFile::from_memory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    uint64_t sum = 0;
    for (const TensorInfo& t : g.tensors())
        sum += t.n_bytes;
    EXPECT_EQ(sum, plan.tensor_bytes);
}

TEST(SynthModel, LayerOverride) {
    SynthOptions o;
    o.preset = "llama2-70b";
    o.n_layer = 3;
    SynthPlan plan = plan_synth_model(o);
    EXPECT_EQ(plan.config.n_layer, 3);
    EXPECT_EQ(plan.config.n_embd, 8192);
    EXPECT_EQ(plan.tensors.size(), 3u + 3u * 9u);
    o.n_layer = 5000;
    EXPECT_THROW(plan_synth_model(o), ArgumentError);
}

TEST(SynthModel, FullSizePlans) {
    // Tensor bytes of full Q4_K_M models, computed by hand from the block sizes and the
    // rules (published llama-2-7b / 70b Q4_K_M files are 4.08 GB / 41.42 GB with metadata).
    SynthOptions o;
    o.preset = "llama2-7b";
    EXPECT_EQ(plan_synth_model(o).tensor_bytes, 4080263168u);
    o.preset = "llama2-70b";
    EXPECT_EQ(plan_synth_model(o).tensor_bytes, 41422143488u);
}

TEST(SynthModel, BadOptionsLeaveNoFile) {
    ScratchFile scratch("bad.gguf");
    SynthOptions o;
    o.preset = "llama9-1t";
    EXPECT_THROW(write_synth_model(o, scratch.path()), ArgumentError);
    EXPECT_FALSE(std::filesystem::exists(scratch.path()));
    o.preset = "tiny";
    o.n_vocab = 10;
    EXPECT_THROW(write_synth_model(o, scratch.path()), ArgumentError);
    EXPECT_FALSE(std::filesystem::exists(scratch.path()));
}

// --routing-skew scales each router row (one expert) by one factor, and touches nothing else: the
// same file otherwise, byte for byte; the factors spread (some experts' rows several times
// others'), and a skew on a dense preset, or outside [0, 4], is refused.
TEST(SynthModel, RoutingSkewScalesRouterRowsOnly) {
    SynthOptions plain;
    plain.preset = "tiny-qwen3moe";
    SynthOptions skewed = plain;
    skewed.routing_skew = 1.0;
    const std::string fa = synth_bytes(plain), fb = synth_bytes(skewed);
    ASSERT_EQ(fa.size(), fb.size());
    GgufFile ga = GgufFile::from_memory(reinterpret_cast<const uint8_t*>(fa.data()), fa.size());
    GgufFile gb = GgufFile::from_memory(reinterpret_cast<const uint8_t*>(fb.data()), fb.size());
    ASSERT_EQ(ga.tensors().size(), gb.tensors().size());
    int routers = 0;
    for (size_t i = 0; i < ga.tensors().size(); ++i) {
        const TensorInfo& ta = ga.tensors()[i];
        const TensorInfo& tb = gb.tensors()[i];
        const bool same = std::equal(ta.data, ta.data + ta.n_bytes, tb.data);
        if (ta.name.find("ffn_gate_inp") == std::string::npos) {
            EXPECT_TRUE(same) << ta.name;
            continue;
        }
        ++routers;
        EXPECT_FALSE(same) << ta.name;
        const int64_t ne0 = static_cast<int64_t>(ta.ne[0]), rows = static_cast<int64_t>(ta.ne[1]);
        const auto* a = reinterpret_cast<const float*>(ta.data);
        const auto* b = reinterpret_cast<const float*>(tb.data);
        double lo = 1e30, hi = 0;
        for (int64_t r = 0; r < rows; ++r) {
            const double f = static_cast<double>(b[r * ne0]) / a[r * ne0];
            for (int64_t j = 1; j < ne0; ++j) EXPECT_NEAR(b[r * ne0 + j], f * a[r * ne0 + j], 1e-5 * std::abs(f * a[r * ne0 + j]) + 1e-12);
            lo = std::min(lo, f);
            hi = std::max(hi, f);
        }
        EXPECT_GT(lo, 0.0);
        EXPECT_GT(hi / lo, 2.0) << ta.name;  // exp(±σ) over 8 experts
    }
    EXPECT_EQ(routers, 4);
    SynthOptions dense;
    dense.routing_skew = 1.0;
    EXPECT_THROW(synth_bytes(dense), ArgumentError);
    skewed.routing_skew = 4.5;
    EXPECT_THROW(synth_bytes(skewed), ArgumentError);
}

TEST(SynthModel, UnwritablePath) {
    SynthOptions o;
    EXPECT_THROW(write_synth_model(o, "/nonexistent-dir/x.gguf"), SystemError);
}

}  // namespace
}  // namespace strata::testing
