// Reading and checking a model's FFN predictors (ffn_predictors.h).
#include "engine/runtime/ffn_predictors.h"

#include <cmath>
#include <filesystem>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/model_placement.h"
#include "predictor/predictor_file.h"

namespace strata {
namespace {

constexpr uint64_t kMaxPredictorBytes = 8ull << 30;  // a 70B model's rank-64 predictors are ~0.8 GiB

}  // namespace

std::string default_predictor_path(const std::string& stats_path) {
    std::filesystem::path p(stats_path);
    if (p.extension() == ".stats") p.replace_extension(".pred");
    else p += ".pred";
    return p.string();
}

FfnPredictors read_ffn_predictors(const std::string& path) {
    if (!std::filesystem::exists(path)) {
        throw SystemError(cat("FFN predictors '", path, "' do not exist: train them with `strata profile -m MODEL -f TEXT",
                              " --train-predictors` (they are written beside the stats), or pass --predictor-file FILE"));
    }
    ReadOptions options;
    options.max_bytes = kMaxPredictorBytes;
    return predictors_from_bytes(read_bounded_file(path, "FFN predictors", options), path);
}

void check_predictors_for(const FfnPredictors& predictors, const Model& model, double sparsity, const std::string& path) {
    const ModelFingerprint fp = model_fingerprint(model);
    if (fp.file_bytes != predictors.model_file_bytes || fp.header_hash != predictors.model_header_hash) {
        throw FormatError(cat("FFN predictors '", path, "' were trained on model '", predictors.model_name, "' (",
                              predictors.model_file_bytes, " bytes, header ", predictors.model_header_hash, "), not on '",
                              model.file().shard(0).path(), "' (", fp.file_bytes, " bytes, header ", fp.header_hash,
                              "): train them on this model with `strata profile --train-predictors`"));
    }
    if (predictors.layers.size() != static_cast<size_t>(model.config().n_layer)) {
        throw FormatError(cat("FFN predictors '", path, "' have ", predictors.layers.size(), " layers, the model ",
                              model.config().n_layer));
    }
    if (std::fabs(predictors.sparsity - sparsity) > 1e-9) {
        throw ArgumentError(cat("FFN predictors '", path, "' were trained for --sparsity ", predictors.sparsity,
                                " (their \"active\" is that sparsity's thresholds); run with --sparsity ", predictors.sparsity,
                                " or train them again with `strata profile --train-predictors --predictor-sparsity ",
                                sparsity, "`"));
    }
}

}  // namespace strata
