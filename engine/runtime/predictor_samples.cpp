// The predictors' sample run (predictor_samples.h).
#include "engine/runtime/predictor_samples.h"

#include <algorithm>
#include <cmath>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/runtime/activation_observer.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/layer_program.h"
#include "engine/runtime/model.h"
#include "engine/runtime/placed_model.h"

namespace strata {
namespace {

// Records each layer's FFN inputs (site FfnInput) and then their active masks (FfnGateAct, the
// same batch's rows) until the layer holds max_tokens samples; later rows are dropped from both.
class SampleCollector : public ActivationObserver {
  public:
    SampleCollector(std::vector<PredictorSamples>& samples, std::vector<float> thresholds, Activation act, int64_t max_tokens)
        : samples_(samples), thresholds_(std::move(thresholds)), pending_(samples.size(), 0), act_(act),
          max_tokens_(max_tokens) {}

    void observe(int il, ActivationSite site, const Tensor& t) override {
        if (site != ActivationSite::FfnInput && site != ActivationSite::FfnGateAct) return;
        STRATA_INVARIANT(t.type == GgmlType::F32 && t.memory != MemoryKind::Device);
        PredictorSamples& s = samples_.at(static_cast<size_t>(il));
        int64_t& pending = pending_[static_cast<size_t>(il)];  // inputs recorded whose masks are due
        const auto row = [&](int64_t r) {
            return reinterpret_cast<const float*>(static_cast<const uint8_t*>(t.data) + r * t.nb[1]);
        };
        if (site == ActivationSite::FfnInput) {
            STRATA_INVARIANT(t.ne[0] == s.n_embd && pending == 0);
            pending = std::min(t.n_rows(), max_tokens_ - s.n());
            for (int64_t r = 0; r < pending; ++r) s.x.insert(s.x.end(), row(r), row(r) + s.n_embd);
            return;
        }
        STRATA_INVARIANT(t.ne[0] == s.n_ff && t.n_rows() >= pending);
        const float th = thresholds_[static_cast<size_t>(il)];
        for (int64_t r = 0; r < pending; ++r) {
            const float* g = row(r);
            for (int64_t i = 0; i < s.n_ff; ++i) s.active.push_back(std::fabs(calibration_activation(act_, g[i])) > th);
        }
        pending = 0;
    }

    bool full() const {
        return std::all_of(samples_.begin(), samples_.end(), [&](const PredictorSamples& s) { return s.n() >= max_tokens_; });
    }

  private:
    std::vector<PredictorSamples>& samples_;
    std::vector<float> thresholds_;
    std::vector<int64_t> pending_;
    Activation act_;
    int64_t max_tokens_;
};

}  // namespace

std::vector<PredictorSamples> collect_predictor_samples(const Model& model, Backend& backend,
                                                        std::span<const TokenId> tokens, const ProfileParams& params,
                                                        const ActivationProfile& profile, double sparsity,
                                                        int64_t max_tokens, const ProfileProgress& progress) {
    const ModelConfig& config = model.config();
    if (backend.memory_kind() == MemoryKind::Device) throw ArgumentError("the predictors' sample run is on a host backend");
    if (config.is_moe()) {
        throw ArgumentError("FFN predictors are for dense models: a mixture of experts' layers have no FFN neurons of their own");
    }
    if (profile.layers.size() != static_cast<size_t>(config.n_layer)) {
        throw ArgumentError(cat("the activation stats have ", profile.layers.size(), " layers, the model ", config.n_layer));
    }
    if (!(sparsity >= 0.0 && sparsity < 1.0)) throw ArgumentError(cat("predictor sparsity ", sparsity, " is outside [0, 1)"));
    if (max_tokens < 10) throw ArgumentError(cat("predictors need at least 10 sample tokens, got ", max_tokens));
    const int64_t n_windows = calibration_windows(tokens.size(), params);
    std::vector<PredictorSamples> samples(static_cast<size_t>(config.n_layer));
    std::vector<float> thresholds;
    for (int il = 0; il < config.n_layer; ++il) {
        PredictorSamples& s = samples[static_cast<size_t>(il)];
        s.n_embd = config.n_embd;
        s.n_ff = model.weights().layers[static_cast<size_t>(il)].ffn_gate.ne[1];
        if (s.n_ff != profile.layers[static_cast<size_t>(il)].n_ff) {
            throw ArgumentError(cat("the activation stats give layer ", il, " ", profile.layers[static_cast<size_t>(il)].n_ff,
                                    " FFN neurons, the model ", s.n_ff));
        }
        // S = 0 keeps every neuron (as SparseFfn's threshold).
        thresholds.push_back(sparsity == 0.0 ? -1.0f : static_cast<float>(profile.ffn_threshold(il, sparsity)));
    }
    SampleCollector collector(samples, std::move(thresholds), config.activation, max_tokens);
    const PlacedModel placed(model, backend);
    LayerProgram program(placed);
    program.set_observer(&collector);
    KvCache kv(config, params.n_ctx, GgmlType::F16, placed.kv_backends());
    const Vocab& vocab = model.tokenizer().vocab();
    for (int64_t w = 0; w < n_windows && !collector.full(); ++w) {
        run_calibration_window(program, kv, vocab, tokens, w, params, {});
        if (progress) progress(std::min((w + 1) * params.n_ctx, max_tokens), std::min(n_windows * params.n_ctx, max_tokens));
    }
    return samples;
}

}  // namespace strata
