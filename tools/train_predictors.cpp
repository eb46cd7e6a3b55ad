// strata profile --train-predictors (train_predictors.h).
#include "tools/train_predictors.h"

#include <cstdio>
#include <filesystem>

#include "engine/core/byte_size.h"
#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "engine/runtime/ffn_predictors.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "engine/runtime/predictor_samples.h"
#include "predictor/predictor_file.h"
#include "predictor/predictor_train.h"
#include "tools/progress_bar.h"

namespace strata::cli {

void add_predictor_train_options(CLI::App& cmd, PredictorTrainFlags& flags) {
    cmd.add_flag("--train-predictors", flags.train,
                 "also train per-layer FFN activity predictors (low rank, Deja Vu style) for `--sparsity S --predictors`,"
                 " written beside the stats (MODEL.pred)");
    cmd.add_option("--predictor-sparsity", flags.sparsity, "the --sparsity S the predictors are for (its thresholds define active)")
        ->capture_default_str();
    cmd.add_option("--predictor-rank", flags.rank, "rank of each layer's predictor")->capture_default_str();
    cmd.add_option("--predictor-recall", flags.recall, "held-out recall of active neurons each layer's threshold is set for")
        ->capture_default_str();
    cmd.add_option("--predictor-tokens", flags.tokens,
                   "training + held-out tokens per layer (memory: tokens x (4 n_embd + n_ff) bytes per layer)")
        ->capture_default_str();
    cmd.add_option("--predictor-epochs", flags.epochs, "training epochs")->capture_default_str();
    cmd.add_option("--predictor-out", flags.output, "predictor file (default: the stats file's name with .pred)");
}

void check_predictor_train_flags(const PredictorTrainFlags& f, const CLI::App& cmd) {
    if (!f.train) {
        for (const char* name : {"--predictor-sparsity", "--predictor-rank", "--predictor-recall", "--predictor-tokens",
                                 "--predictor-epochs", "--predictor-out"}) {
            if (cmd.count(name) > 0) throw ArgumentError(cat(name, " was given without --train-predictors"));
        }
        return;
    }
    if (!(f.sparsity >= 0 && f.sparsity < 1)) throw ArgumentError(cat("--predictor-sparsity ", f.sparsity, " is outside [0, 1)"));
    if (f.rank < 1 || f.rank > 4096) throw ArgumentError(cat("--predictor-rank ", f.rank, " is outside 1..4096"));
    if (!(f.recall > 0 && f.recall <= 1)) throw ArgumentError(cat("--predictor-recall ", f.recall, " is outside (0, 1]"));
    if (f.tokens < 10 || f.tokens > (1 << 24)) throw ArgumentError(cat("--predictor-tokens ", f.tokens, " is outside 10..16777216"));
    if (f.epochs < 1 || f.epochs > 1000) throw ArgumentError(cat("--predictor-epochs ", f.epochs, " is outside 1..1000"));
}

void train_predictors(const Model& model, Backend& backend, std::span<const TokenId> tokens, const ProfileParams& params,
                      const ActivationProfile& profile, const PredictorTrainFlags& flags, const std::string& stats_path,
                      const std::string& text_name) {
    const std::string output = flags.output.empty() ? default_predictor_path(stats_path) : flags.output;
    check_write_target(output, "FFN predictors");
    ProgressBar bar("predictor samples", ProgressStyle{"tokens"});
    std::vector<PredictorSamples> samples = collect_predictor_samples(
        model, backend, tokens, params, profile, flags.sparsity, flags.tokens,
        [&](int64_t done, int64_t total) { bar.update(static_cast<uint64_t>(done), static_cast<uint64_t>(total), "tokens"); });
    bar.finish();

    FfnPredictors out;
    const ModelFingerprint fp = model_fingerprint(model);
    out.model_name = profile.model_name;
    out.model_file_bytes = fp.file_bytes;
    out.model_header_hash = fp.header_hash;
    out.text_name = text_name;
    out.n_tokens = static_cast<uint64_t>(samples.front().n());
    out.sparsity = flags.sparsity;
    out.target_recall = flags.recall;
    PredictorTrainOptions o;
    o.rank = flags.rank;
    o.epochs = flags.epochs;
    o.target_recall = flags.recall;
    ProgressBar train_bar("train predictors", ProgressStyle{"layers"});
    double recall = 0, predicted = 0, active = 0;
    for (size_t il = 0; il < samples.size(); ++il) {
        out.layers.push_back(train_predictor(samples[il], o));
        samples[il] = PredictorSamples{};  // free the layer's samples
        const LayerPredictor& p = out.layers.back();
        recall += p.recall;
        predicted += p.predicted_fraction;
        active += p.active_fraction;
        train_bar.update(il + 1, samples.size(), "layers");
    }
    train_bar.finish();
    write_file_atomic(output, predictors_to_bytes(out), "FFN predictors");
    const double n = static_cast<double>(out.layers.size());
    std::printf("trained %zu predictors (rank %lld, %llu tokens each, S = %.3f): %s f32; wrote %s\n", out.layers.size(),
                static_cast<long long>(flags.rank), static_cast<unsigned long long>(out.n_tokens), flags.sparsity,
                format_bytes(out.bytes()).c_str(), output.c_str());
    std::printf("  held-out, mean over layers: recall %.3f of active neurons; candidates %.3f of neurons (active %.3f)\n",
                recall / n, predicted / n, active / n);
    for (size_t il : {size_t{0}, out.layers.size() / 2, out.layers.size() - 1}) {
        const LayerPredictor& p = out.layers[il];
        std::printf("  layer %zu: recall %.3f, candidates %.3f, active %.3f\n", il, p.recall, p.predicted_fraction,
                    p.active_fraction);
    }
}

}  // namespace strata::cli
