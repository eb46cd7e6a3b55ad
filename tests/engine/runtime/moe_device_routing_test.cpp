// Where a device run of a tiny random mixture-of-experts model leaves the CPU's path: the same
// tokens (teacher-forced, so both runs see the same inputs) through every weight on the CPU and
// every weight on the device (CUDA where present, else the fake device), recording each layer's
// router logits and top-k choices. Before any choice differs, the router logits must agree
// within the quantized-activation tolerance (15% of the layer's logit scale); a choice that
// differs must be a near-tie on the CPU (its k-th and (k+1)-th logits closer than a few times
// the logit difference), else a device op is wrong. Prints, per layer, the largest logit
// difference and the flips, for the GPU run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backends/builtin_backends.h"
#include "engine/runtime/activation_observer.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"
#include "engine/synth/synth_model.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

// Per layer, in order of evaluation: every token's router logits and choices.
class RoutingRecorder : public ActivationObserver {
  public:
    struct Layer {
        std::vector<float> logits;   // [n_expert] per token
        std::vector<int32_t> experts;  // [n_used] per token
    };
    explicit RoutingRecorder(int n_layer) : layers(static_cast<size_t>(n_layer)) {}
    void observe(int, ActivationSite, const Tensor&) override {}
    void observe_routing(int il, const RoutingView& r) override {
        Layer& l = layers[static_cast<size_t>(il)];
        l.logits.insert(l.logits.end(), r.logits, r.logits + r.n_tokens * r.n_expert);
        l.experts.insert(l.experts.end(), r.experts, r.experts + r.n_tokens * r.n_used);
    }
    std::vector<Layer> layers;
};

// The prompt in batches of 4, then single tokens (decode steps).
RoutingRecorder record(const PlacedModel& placed, const std::vector<int32_t>& tokens) {
    const ModelConfig& c = placed.model().config();
    RoutingRecorder rec(c.n_layer);
    LayerProgram program(placed, 0);
    program.set_observer(&rec);
    KvCache kv(c, 64, GgmlType::F16, placed.kv_backends());
    std::vector<float> hidden;
    size_t i = 0;
    while (i < tokens.size()) {
        const size_t n = i < 12 ? std::min<size_t>(4, tokens.size() - i) : 1;
        program.forward({tokens.data() + i, n}, kv, {}, hidden);
        i += n;
    }
    return rec;
}

std::unique_ptr<Backend> device_backend() {
    const BackendEntry* cuda = builtin_backends().find("cuda");
    const bool has_cuda = cuda != nullptr && cuda->unavailable().empty();
    return builtin_backends().create(has_cuda ? "cuda" : "fake", BackendConfig{1ull << 30, 2}, "--gpu");
}

class MoeDeviceRoutingTest : public ::testing::TestWithParam<const char*> {};

TEST_P(MoeDeviceRoutingTest, ChoicesDifferOnlyAtNearTies) {
    testing::ScratchFile file(std::string(GetParam()) + "_device_routing.gguf");
    SynthOptions options;
    options.preset = GetParam();
    write_synth_model(options, file.path());
    const Model model(file.path());
    const MoeConfig& mc = model.config().moe;
    std::vector<int32_t> tokens;
    for (int t = 0; t < 24; ++t) tokens.push_back(static_cast<int32_t>((t * 7919 + 17) % 512));

    cpu::CpuBackend cpu(2);
    const RoutingRecorder want = record(PlacedModel(model, cpu), tokens);
    const std::unique_ptr<Backend> device = device_backend();
    const RoutingRecorder got = record(PlacedModel(model, *device), tokens);

    const auto n_tok = static_cast<int64_t>(tokens.size());
    const int n_layer = model.config().n_layer;
    const int64_t ne = mc.n_expert, k = mc.n_expert_used;
    // A flip at (token t, layer l) reaches every later layer of t and every layer >= l of later
    // tokens (through the KV cache).
    std::vector<std::pair<int64_t, int>> flips;
    const auto reached = [&](int64_t t, int l) {
        return std::any_of(flips.begin(), flips.end(), [&](const auto& f) {
            return (f.first <= t && f.second < l) || (f.first < t && f.second <= l);
        });
    };
    for (int l = 0; l < n_layer; ++l) {
        const auto& a = want.layers[static_cast<size_t>(l)];
        const auto& b = got.layers[static_cast<size_t>(l)];
        ASSERT_EQ(a.logits.size(), static_cast<size_t>(n_tok * ne));
        ASSERT_EQ(b.logits.size(), a.logits.size());
        double worst = 0;
        int n_flips = 0;
        // The logit scale of the layer: the quantized activations' error grows with |x|·|w|, not
        // with one token's largest logit (a token whose logits are all small has as large an
        // error). On the H100 the device run stayed within 7.2% of this scale (tiny-mixtral layer
        // 1) and within 5% for tiny-qwen3moe; a wrong op would be off by its whole size.
        double layer_scale = 0;
        for (float v : a.logits) layer_scale = std::max(layer_scale, std::abs(static_cast<double>(v)));
        for (int64_t t = 0; t < n_tok; ++t) {
            const float* x = a.logits.data() + t * ne;
            const float* y = b.logits.data() + t * ne;
            double diff = 0;
            for (int64_t e = 0; e < ne; ++e) diff = std::max(diff, std::abs(static_cast<double>(x[e]) - y[e]));
            std::vector<int32_t> ca(a.experts.begin() + t * k, a.experts.begin() + (t + 1) * k);
            std::vector<int32_t> cb(b.experts.begin() + t * k, b.experts.begin() + (t + 1) * k);
            std::sort(ca.begin(), ca.end());
            std::sort(cb.begin(), cb.end());
            if (reached(t, l)) continue;  // downstream of a flip: its inputs differ by design
            worst = std::max(worst, diff);
            EXPECT_LE(diff, 0.15 * layer_scale + 1e-4) << "layer " << l << " token " << t << ": router logits differ before any flip";
            if (ca == cb) continue;
            // The CPU's margin between its k-th and (k+1)-th logits.
            std::vector<float> sorted(x, x + ne);
            std::sort(sorted.begin(), sorted.end(), std::greater<>());
            const double margin = static_cast<double>(sorted[static_cast<size_t>(k) - 1]) - sorted[static_cast<size_t>(k)];
            std::printf("flip: layer %d token %lld: CPU margin %.3g, logit diff %.3g\n", l, static_cast<long long>(t), margin, diff);
            EXPECT_LE(margin, 4 * diff + 1e-6) << "layer " << l << " token " << t << ": a wide-margin choice flipped";
            flips.emplace_back(t, l);
            ++n_flips;
        }
        std::printf("%s on %s: layer %d: max router logit diff %.3g (before flips), %d flips\n", GetParam(),
                    std::string(device->name()).c_str(), l, worst, n_flips);
    }
}

INSTANTIATE_TEST_SUITE_P(Presets, MoeDeviceRoutingTest, ::testing::Values("tiny-qwen3moe", "tiny-mixtral"));

}  // namespace
}  // namespace strata
