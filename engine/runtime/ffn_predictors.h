// Trained FFN activity predictors of a model (predictor/ffn_predictor.h): `strata profile
// --train-predictors` writes them beside the activation stats, --predictors reads them. Where
// they are by default, the bounded read, and the checks that they belong to the model and to
// the sparsity they are used at.
#pragma once

#include <string>

#include "predictor/ffn_predictor.h"

namespace strata {

class Model;

// The predictor file of a stats file: M.stats -> M.pred (any other name: NAME.pred).
std::string default_predictor_path(const std::string& stats_path);

// SystemError naming the training command when the file is missing; FormatError (predictor_file.h)
// on a bad one; ArgumentError over the size cap.
FfnPredictors read_ffn_predictors(const std::string& path);

// FormatError when the predictors were trained on another model file or another layer count;
// ArgumentError when they were trained for another sparsity than `sparsity` ("active" is
// defined by that sparsity's thresholds).
void check_predictors_for(const FfnPredictors& predictors, const Model& model, double sparsity, const std::string& path);

}  // namespace strata
