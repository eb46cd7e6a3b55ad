// Which GGML type each tensor gets in a synthetic file of a given overall type. q4_k_m
// follows llama.cpp's Q4_K_M rules exactly (docs/FORMATS.md §2.6), so a synthetic model has the
// byte mix and the kernels mix of a real Q4_K_M file. The i-quant and ternary types
// (iq2_xxs, iq1_s, tq2_0, ...) are simpler: every matrix gets the type, except the output
// matrix (Q6_K), which real files of these types also keep at more bits.
#pragma once

#include <string_view>

#include "engine/model/file_type.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor_spec.h"
#include "quant/ggml_type.h"

namespace strata {

enum class SynthType {
    Q4_K_M, Q8_0, F16,
    IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0,
};

std::string_view synth_type_name(SynthType type);  // "q4_k_m", "q8_0", "f16", "iq2_xs", ...
// Case-insensitive; throws ArgumentError listing the accepted names.
SynthType parse_synth_type(std::string_view name);
// The accepted names, comma-separated (for help texts).
std::string synth_type_names();
// general.file_type written for the type (15, 7, 1, 19 for iq2_xxs, ...).
FileType synth_file_type(SynthType type);

// llama.cpp's use_more_bits: layers whose attn_v / ffn_down get Q6_K in Q4_K_M:
// i < n/8, i >= 7n/8, or every third layer in between.
bool use_more_bits(int64_t i_layer, int64_t n_layer);

// The type of one expected tensor in a file of `type`. 1-D tensors (norms, biases,
// rope_freqs) stay F32.
GgmlType synth_tensor_type(const TensorSpec& spec, const ModelConfig& config, SynthType type);

}  // namespace strata
