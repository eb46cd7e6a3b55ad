// Model: one loaded model — its GGUF file (mapped), validated configuration, weight views and
// tokenizer. Immutable after loading; sessions share it.
#pragma once

#include <memory>
#include <string>

#include "engine/gguf/model_file.h"
#include "engine/model/model_config.h"
#include "engine/model/rope_overrides.h"
#include "engine/runtime/model_weights.h"
#include "engine/tokenizer/tokenizer.h"

namespace strata {

class Model {
public:
    // Opens, validates and binds; throws FormatError/UnsupportedError/SystemError with the file
    // name in the message. rope: command-line RoPE settings over the file's (ArgumentError for
    // bad ones).
    explicit Model(const std::string& path, const RopeOverrides& rope = {});

    const ModelFile& file() const { return file_; }
    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    const Tokenizer& tokenizer() const { return tokenizer_; }

private:
    ModelFile file_;
    ModelConfig config_;
    ModelWeights weights_;
    Tokenizer tokenizer_;
};

}  // namespace strata
