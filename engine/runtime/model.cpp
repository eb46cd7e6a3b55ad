// Model loading (model.h).
#include "engine/runtime/model.h"

namespace strata {

Model::Model(const std::string& path)
    : file_(path),
      config_(ModelConfig::from_file(file_)),
      weights_(bind_weights(file_, config_)),
      tokenizer_(Tokenizer::from_file(file_)) {}

}  // namespace strata
