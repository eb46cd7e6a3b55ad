// Model loading (model.h).
#include "engine/runtime/model.h"

namespace strata {

namespace {

ModelConfig config_with(const ModelFile& file, const RopeOverrides& rope) {
    ModelConfig c = ModelConfig::from_file(file);
    apply_rope_overrides(rope, c);
    return c;
}

}  // namespace

Model::Model(const std::string& path, const RopeOverrides& rope)
    : file_(path),
      config_(config_with(file_, rope)),
      weights_(bind_weights(file_, config_)),
      tokenizer_(Tokenizer::from_file(file_)) {}

}  // namespace strata
