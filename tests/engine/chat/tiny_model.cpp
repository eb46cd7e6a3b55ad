// Writes the tiny-gemma3 synthetic preset (tiny_model.h).
#include "tests/engine/chat/tiny_model.h"

#include "engine/synth/synth_model.h"

namespace strata::testing {

void write_tiny_gemma3(const std::string& path) {
    SynthOptions options;
    options.preset = "tiny-gemma3";
    write_synth_model(options, path);
}

}  // namespace strata::testing
