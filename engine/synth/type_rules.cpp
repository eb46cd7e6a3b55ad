// Per-tensor type choice for synthetic files (see type_rules.h).
#include "engine/synth/type_rules.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "engine/core/error.h"

namespace strata {

std::string_view synth_type_name(SynthType type) {
    switch (type) {
        case SynthType::Q4_K_M:
            return "q4_k_m";
        case SynthType::Q8_0:
            return "q8_0";
        case SynthType::F16:
            return "f16";
    }
    return "unknown";
}

SynthType parse_synth_type(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    for (SynthType t : {SynthType::Q4_K_M, SynthType::Q8_0, SynthType::F16}) {
        if (synth_type_name(t) == lower) return t;
    }
    throw ArgumentError(cat("unknown model type '", name, "' (expected q4_k_m, q8_0 or f16)"));
}

FileType synth_file_type(SynthType type) {
    switch (type) {
        case SynthType::Q4_K_M:
            return FileType::MostlyQ4_K_M;
        case SynthType::Q8_0:
            return FileType::MostlyQ8_0;
        case SynthType::F16:
            return FileType::MostlyF16;
    }
    return FileType::AllF32;
}

bool use_more_bits(int64_t i_layer, int64_t n_layer) {
    return i_layer < n_layer / 8 || i_layer >= 7 * n_layer / 8 || (i_layer - n_layer / 8) % 3 == 2;
}

namespace {

// Rows that are not a whole number of 256-blocks cannot hold K-quants.
GgmlType shape_fallback(GgmlType type, int64_t ne0) {
    if (ne0 % 256 != 0) {
        switch (type) {
            case GgmlType::Q4_K:
                type = GgmlType::Q5_0;
                break;
            case GgmlType::Q5_K:
                type = GgmlType::Q5_1;
                break;
            case GgmlType::Q6_K:
                type = GgmlType::Q8_0;
                break;
            default:
                break;
        }
    }
    if (type != GgmlType::F16 && type != GgmlType::F32 && ne0 % 32 != 0) type = GgmlType::F16;
    return type;
}

// llama.cpp treats an 80-layer llama/qwen2 as the 70B model, whose attn_v (shared by 8 query
// heads) gets Q5_K instead of Q4_K.
bool is_70b_class(const ModelConfig& c) {
    return c.n_layer == 80 && (c.architecture == "llama" || c.architecture == "qwen2");
}

GgmlType q4_k_m_type(const TensorSpec& spec, const ModelConfig& c) {
    bool is_output =
        spec.role == TensorRole::Output || (spec.role == TensorRole::TokenEmbd && c.tied_output);
    if (is_output) return GgmlType::Q6_K;
    switch (spec.role) {
        case TensorRole::AttnV: {
            GgmlType t = use_more_bits(spec.layer, c.n_layer) ? GgmlType::Q6_K : GgmlType::Q4_K;
            if (t == GgmlType::Q4_K && is_70b_class(c)) t = GgmlType::Q5_K;
            return t;
        }
        case TensorRole::FfnDown:
            return use_more_bits(spec.layer, c.n_layer) ? GgmlType::Q6_K : GgmlType::Q4_K;
        default:
            return GgmlType::Q4_K;
    }
}

}  // namespace

GgmlType synth_tensor_type(const TensorSpec& spec, const ModelConfig& config, SynthType type) {
    if (spec.ne.size() < 2 || is_norm_role(spec.role) || is_vector_role(spec.role)) {
        return GgmlType::F32;
    }
    GgmlType t = GgmlType::F16;
    switch (type) {
        case SynthType::Q4_K_M:
            t = q4_k_m_type(spec, config);
            break;
        case SynthType::Q8_0:
            t = GgmlType::Q8_0;
            break;
        case SynthType::F16:
            t = GgmlType::F16;
            break;
    }
    return shape_fallback(t, spec.ne[0]);
}

}  // namespace strata
