// Writes a synthetic GGUF model: a preset's exact shapes, a complete tokenizer, the type mix
// of a real q4_k_m / q8_0 / f16 file and random weights of realistic magnitude. The file is
// streamed through GgufWriter, so memory use does not grow with the model (a few MiB of
// buffers plus the vocabulary). Same options and seed => byte-identical file.
//
// Weight magnitudes (std of the dequantized values, mean 0 unless stated):
//   token_embd, output   1/sqrt(n_embd)
//   other matrices       1/sqrt(ne0)   (ne0 = fan-in)
//   norm weights         mean 1, std 0.02 (F32)
//   biases               std 0.02 (F32); rope_freqs 1.0
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/tensor_spec.h"
#include "engine/synth/synth_vocab.h"
#include "engine/synth/type_rules.h"
#include "engine/synth/weight_fill.h"

namespace strata {

struct SynthProgress {
    uint64_t bytes_done = 0;   // tensor data written so far
    uint64_t bytes_total = 0;  // tensor data in the file
    int64_t tensor_index = 0;  // tensor being written
    int64_t n_tensors = 0;
    std::string_view tensor_name;
};
// Called on the writing thread after each chunk (a few MiB) and once at the end.
using SynthProgressFn = std::function<void(const SynthProgress&)>;

struct SynthOptions {
    std::string preset = "tiny";
    SynthType type = SynthType::Q4_K_M;
    int64_t n_layer = 0;  // 0: the preset's layer count
    int64_t n_vocab = 0;  // 0: the preset's vocabulary size
    uint64_t seed = 42;
    // Mixture-of-experts presets: expert e's router row scaled by exp(routing_skew * g_e), g_e a
    // standard normal drawn per (seed, layer, e), so that some experts win the top-k far more
    // often than others, as real routers favour some experts (0: none; at most 4).
    double routing_skew = 0.0;
    SynthProgressFn on_progress;
};

struct SynthTensor {
    TensorSpec spec;
    GgmlType type = GgmlType::F32;
    WeightDist dist;
    uint64_t n_bytes = 0;
};

// Everything that goes into the file, before any byte is written.
struct SynthPlan {
    std::string preset;
    ModelConfig config;
    SynthVocab vocab;
    std::vector<SynthTensor> tensors;  // in file order
    uint64_t tensor_bytes = 0;
};

// Throws ArgumentError for an unknown preset or out-of-range overrides.
SynthPlan plan_synth_model(const SynthOptions& options);

struct SynthResult {
    uint64_t file_bytes = 0;
    int64_t n_tensors = 0;
    double seconds = 0.0;
};

SynthResult write_synth_model(const SynthOptions& options, const std::string& path);
SynthResult write_synth_model(const SynthOptions& options, std::ostream& out);

}  // namespace strata
