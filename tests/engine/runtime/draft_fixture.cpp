// Tiny synthetic models for the draft-model tests (draft_fixture.h).
#include "tests/engine/runtime/draft_fixture.h"

#include "engine/synth/synth_model.h"

namespace strata::testing {

std::unique_ptr<ScratchFile> tiny_model_file(const std::string& name, int64_t n_layer, int64_t n_vocab) {
    auto file = std::make_unique<ScratchFile>(name);
    SynthOptions o;
    o.preset = "tiny";
    o.n_layer = n_layer;
    o.n_vocab = n_vocab;
    write_synth_model(o, file->path());
    return file;
}

}  // namespace strata::testing
