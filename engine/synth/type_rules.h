// Which GGML type each tensor gets in a synthetic file of a given overall type. q4_k_m
// follows llama.cpp's Q4_K_M rules exactly (gguf-facts §2.6), so a synthetic model has the
// byte mix and the kernels mix of a real Q4_K_M file.
#pragma once

#include <string_view>

#include "engine/model/file_type.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor_spec.h"
#include "quant/ggml_type.h"

namespace strata {

enum class SynthType { Q4_K_M, Q8_0, F16 };

std::string_view synth_type_name(SynthType type);  // "q4_k_m", "q8_0", "f16"
// Case-insensitive; throws ArgumentError listing the accepted names.
SynthType parse_synth_type(std::string_view name);
// general.file_type written for the type (15, 7, 1).
FileType synth_file_type(SynthType type);

// llama.cpp's use_more_bits: layers whose attn_v / ffn_down get Q6_K in Q4_K_M:
// i < n/8, i >= 7n/8, or every third layer in between.
bool use_more_bits(int64_t i_layer, int64_t n_layer);

// The type of one expected tensor in a file of `type`. 1-D tensors (norms, biases,
// rope_freqs) stay F32.
GgmlType synth_tensor_type(const TensorSpec& spec, const ModelConfig& config, SynthType type);

}  // namespace strata
