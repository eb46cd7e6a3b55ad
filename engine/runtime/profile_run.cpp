// The calibration run and the observer that fills the activation statistics (profile_run.h).
#include "engine/runtime/profile_run.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/runtime/activation_observer.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/placed_model.h"

namespace strata {

float calibration_activation(Activation act, float g) {
    const double x = g;
    if (act == Activation::Silu) return static_cast<float>(x / (1.0 + std::exp(-x)));
    return static_cast<float>(0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
}

int64_t calibration_windows(size_t n_tokens, const ProfileParams& params) {
    const int64_t n_ctx = params.n_ctx;
    if (n_ctx < 2 || params.n_batch <= 0) throw ArgumentError(cat("profile: bad window ", n_ctx, " or batch ", params.n_batch));
    int64_t n_windows = static_cast<int64_t>(n_tokens) / n_ctx;
    if (params.max_tokens > 0) n_windows = std::min(n_windows, std::max<int64_t>(1, params.max_tokens / n_ctx));
    if (n_windows < 1) {
        throw ArgumentError(cat("the calibration text has ", n_tokens, " tokens; a window of -c ", n_ctx, " needs at least that many"));
    }
    return n_windows;
}

void run_calibration_window(LayerProgram& program, KvCache& kv, const Vocab& vocab, std::span<const TokenId> tokens,
                            int64_t w, const ProfileParams& params, const std::function<void(int64_t)>& after_batch) {
    const int64_t n_ctx = params.n_ctx;
    std::vector<TokenId> window(tokens.begin() + w * n_ctx, tokens.begin() + (w + 1) * n_ctx);
    if (vocab.add_bos && vocab.bos != kNoToken) window[0] = vocab.bos;
    kv.clear();
    std::vector<float> hidden;
    for (int64_t b0 = 0; b0 < n_ctx; b0 += params.n_batch) {
        const int64_t nb = std::min(params.n_batch, n_ctx - b0);
        program.forward({window.data() + b0, static_cast<size_t>(nb)}, kv, {}, hidden);
        if (after_batch) after_batch(nb);
    }
}

namespace {

class Collector : public ActivationObserver {
  public:
    Collector(ActivationProfile& profile, Activation act) : profile_(profile), act_(act) {}

    void observe(int il, ActivationSite site, const Tensor& t) override {
        STRATA_INVARIANT(t.type == GgmlType::F32 && t.memory != MemoryKind::Device);
        LayerActivationStats& l = profile_.layers.at(static_cast<size_t>(il));
        MagnitudeHistogram& h = l.histograms[static_cast<size_t>(site)];
        const int64_t ne0 = t.ne[0];
        for (int64_t r = 0; r < t.n_rows(); ++r) {
            const auto* row = reinterpret_cast<const float*>(static_cast<const uint8_t*>(t.data) + r * t.nb[1]);
            if (site != ActivationSite::FfnGateAct) {
                h.add(row, ne0);
                continue;
            }
            STRATA_INVARIANT(ne0 == l.n_ff);
            a_.resize(static_cast<size_t>(ne0));
            for (int64_t i = 0; i < ne0; ++i) a_[static_cast<size_t>(i)] = calibration_activation(act_, row[i]);
            h.add(a_.data(), ne0);
            if (!counting_) continue;
            for (size_t g = 0; g < l.neuron_thresholds.size(); ++g) {
                const float th = static_cast<float>(l.neuron_thresholds[g]);
                uint32_t* counts = l.neuron_counts[g].data();
                for (int64_t i = 0; i < ne0; ++i) counts[i] += std::fabs(a_[static_cast<size_t>(i)]) > th;
            }
        }
    }

    void observe_routing(int il, const RoutingView& r) override {
        std::vector<uint64_t>& counts = profile_.expert_counts.at(static_cast<size_t>(il));
        for (int64_t i = 0; i < r.n_tokens * r.n_used; ++i) ++counts.at(static_cast<size_t>(r.experts[i]));
    }

    // Fixes the thresholds from the histograms so far; neurons are counted from now on. A MoE
    // layer (n_ff 0: no FFN neurons of its own) keeps zero thresholds.
    void start_counting() {
        for (size_t il = 0; il < profile_.layers.size(); ++il) {
            LayerActivationStats& l = profile_.layers[il];
            for (double s : kNeuronCountSparsity) {
                l.neuron_thresholds.push_back(l.n_ff > 0 ? profile_.ffn_threshold(static_cast<int>(il), s) : 0.0);
            }
        }
        counting_ = true;
    }
    void end_batch(int64_t n) {
        if (!profile_.expert_counts.empty()) profile_.expert_tokens += static_cast<uint64_t>(n);  // routing: the whole run
        if (!counting_) return;
        for (LayerActivationStats& l : profile_.layers) l.neuron_tokens += static_cast<uint64_t>(n);
    }
    bool counting() const { return counting_; }

  private:
    ActivationProfile& profile_;
    Activation act_;
    bool counting_ = false;
    std::vector<float> a_;
};

}  // namespace

ActivationProfile profile_activations(const Model& model, Backend& backend, std::span<const TokenId> tokens,
                                      const ProfileParams& params, const ProfileProgress& progress) {
    if (backend.memory_kind() == MemoryKind::Device) throw ArgumentError("strata profile runs on a host backend");
    const int64_t n_ctx = params.n_ctx;
    const int64_t n_windows = calibration_windows(tokens.size(), params);
    const ModelConfig& config = model.config();
    ActivationProfile profile;
    const ModelFingerprint fp = model_fingerprint(model);
    profile.model_name = std::filesystem::path(model.file().shard(0).path()).filename().string();
    profile.model_file_bytes = fp.file_bytes;
    profile.model_header_hash = fp.header_hash;
    profile.layers.resize(static_cast<size_t>(config.n_layer));
    for (int il = 0; il < config.n_layer; ++il) {
        LayerActivationStats& l = profile.layers[static_cast<size_t>(il)];
        l.n_ff = config.is_moe() ? 0 : model.weights().layers[static_cast<size_t>(il)].ffn_gate.ne[1];
        l.neuron_counts.assign(kNeuronCountSparsity.size(), std::vector<uint32_t>(static_cast<size_t>(l.n_ff), 0));
    }
    if (config.is_moe()) profile.expert_counts.assign(static_cast<size_t>(config.n_layer), std::vector<uint64_t>(static_cast<size_t>(config.moe.n_expert), 0));
    Collector collector(profile, config.activation);
    const PlacedModel placed(model, backend);
    LayerProgram program(placed);
    program.set_observer(&collector);
    KvCache kv(config, n_ctx, GgmlType::F16, placed.kv_backends());
    const Vocab& vocab = model.tokenizer().vocab();
    const int64_t warmup = std::max<int64_t>(1, static_cast<int64_t>(params.warmup_fraction * static_cast<double>(n_windows)));
    for (int64_t w = 0; w < n_windows; ++w) {
        if (w == warmup && n_windows > 1) collector.start_counting();
        run_calibration_window(program, kv, vocab, tokens, w, params, [&](int64_t nb) { collector.end_batch(nb); });
        profile.n_tokens += static_cast<uint64_t>(n_ctx);
        if (progress) progress((w + 1) * n_ctx, n_windows * n_ctx);
    }
    if (!collector.counting()) collector.start_counting();  // one window: thresholds, no counts
    return profile;
}

}  // namespace strata
