// Per-tensor type choice for synthetic files (see type_rules.h).
#include "engine/synth/type_rules.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "engine/core/error.h"

namespace strata {

namespace {

struct SynthTypeInfo {
    SynthType type;
    std::string_view name;
    FileType file_type;
    GgmlType weights;  // the type of the matrices (q4_k_m: see q4_k_m_type)
};

constexpr SynthTypeInfo kSynthTypes[] = {
    {SynthType::Q4_K_M, "q4_k_m", FileType::MostlyQ4_K_M, GgmlType::Q4_K},
    {SynthType::Q8_0, "q8_0", FileType::MostlyQ8_0, GgmlType::Q8_0},
    {SynthType::F16, "f16", FileType::MostlyF16, GgmlType::F16},
    {SynthType::IQ2_XXS, "iq2_xxs", FileType::MostlyIQ2_XXS, GgmlType::IQ2_XXS},
    {SynthType::IQ2_XS, "iq2_xs", FileType::MostlyIQ2_XS, GgmlType::IQ2_XS},
    {SynthType::IQ2_S, "iq2_s", FileType::MostlyIQ2_S, GgmlType::IQ2_S},
    {SynthType::IQ3_XXS, "iq3_xxs", FileType::MostlyIQ3_XXS, GgmlType::IQ3_XXS},
    {SynthType::IQ3_S, "iq3_s", FileType::MostlyIQ3_S, GgmlType::IQ3_S},
    {SynthType::IQ1_S, "iq1_s", FileType::MostlyIQ1_S, GgmlType::IQ1_S},
    {SynthType::IQ1_M, "iq1_m", FileType::MostlyIQ1_M, GgmlType::IQ1_M},
    {SynthType::TQ1_0, "tq1_0", FileType::MostlyTQ1_0, GgmlType::TQ1_0},
    {SynthType::TQ2_0, "tq2_0", FileType::MostlyTQ2_0, GgmlType::TQ2_0},
};

const SynthTypeInfo& info(SynthType type) {
    for (const SynthTypeInfo& i : kSynthTypes) {
        if (i.type == type) return i;
    }
    throw ArgumentError(cat("synth: unknown SynthType ", static_cast<int>(type)));
}

}  // namespace

std::string_view synth_type_name(SynthType type) {
    return info(type).name;
}

std::string synth_type_names() {
    std::string names;
    for (const SynthTypeInfo& i : kSynthTypes) names += (names.empty() ? "" : ", ") + std::string(i.name);
    return names;
}

SynthType parse_synth_type(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    for (const SynthTypeInfo& i : kSynthTypes) {
        if (i.name == lower) return i.type;
    }
    throw ArgumentError(cat("unknown model type '", name, "' (expected one of ", synth_type_names(), ")"));
}

FileType synth_file_type(SynthType type) {
    return info(type).file_type;
}

bool use_more_bits(int64_t i_layer, int64_t n_layer) {
    return i_layer < n_layer / 8 || i_layer >= 7 * n_layer / 8 || (i_layer - n_layer / 8) % 3 == 2;
}

namespace {

// Rows that are not a whole number of 256-blocks cannot hold K-quants or i-quants.
GgmlType shape_fallback(GgmlType type, int64_t ne0) {
    if (ne0 % 256 != 0 && type_traits(type).block_size == 256) {
        type = type == GgmlType::Q5_K ? GgmlType::Q5_1 : type == GgmlType::Q6_K ? GgmlType::Q8_0 : GgmlType::Q5_0;
    }
    if (type != GgmlType::F16 && type != GgmlType::F32 && ne0 % 32 != 0) type = GgmlType::F16;
    return type;
}

// llama.cpp treats an 80-layer llama/qwen2 as the 70B model, whose attn_v (shared by 8 query
// heads) gets Q5_K instead of Q4_K.
bool is_70b_class(const ModelConfig& c) {
    return c.n_layer == 80 && (c.architecture == "llama" || c.architecture == "qwen2");
}

bool is_output_matrix(const TensorSpec& spec, const ModelConfig& c) {
    return spec.role == TensorRole::Output || (spec.role == TensorRole::TokenEmbd && c.tied_output);
}

GgmlType q4_k_m_type(const TensorSpec& spec, const ModelConfig& c) {
    if (is_output_matrix(spec, c)) return GgmlType::Q6_K;
    // llama.cpp bumps the attention of 8-expert models (Mixtral): attn_k/attn_v Q8_0, attn_output Q5_K.
    const bool eight_experts = c.moe.n_expert == 8;
    switch (spec.role) {
        case TensorRole::AttnV: {
            GgmlType t = use_more_bits(spec.layer, c.n_layer) ? GgmlType::Q6_K : GgmlType::Q4_K;
            if (t == GgmlType::Q4_K && is_70b_class(c)) t = GgmlType::Q5_K;
            return eight_experts ? GgmlType::Q8_0 : t;
        }
        case TensorRole::AttnK:
            return eight_experts ? GgmlType::Q8_0 : GgmlType::Q4_K;
        case TensorRole::AttnQkv:  // llama.cpp: Q5_K in Q4_K_M
            return GgmlType::Q5_K;
        case TensorRole::AttnOutput:
            return eight_experts ? GgmlType::Q5_K : GgmlType::Q4_K;
        case TensorRole::FfnDown:
        case TensorRole::FfnDownExps:
        case TensorRole::FfnDownShexp:
            return use_more_bits(spec.layer, c.n_layer) ? GgmlType::Q6_K : GgmlType::Q4_K;
        default:
            return GgmlType::Q4_K;
    }
}

}  // namespace

GgmlType synth_tensor_type(const TensorSpec& spec, const ModelConfig& config, SynthType type) {
    // llama.cpp never quantizes the MoE router (ffn_gate_inp).
    if (spec.ne.size() < 2 || is_norm_role(spec.role) || is_vector_role(spec.role) ||
        spec.role == TensorRole::FfnGateInp) {
        return GgmlType::F32;
    }
    GgmlType t = info(type).weights;
    if (type == SynthType::Q4_K_M) {
        t = q4_k_m_type(spec, config);
    } else if (t != GgmlType::Q8_0 && t != GgmlType::F16 && is_output_matrix(spec, config)) {
        t = GgmlType::Q6_K;  // low-bit files keep the output matrix at more bits
    }
    return shape_fallback(t, spec.ne[0]);
}

}  // namespace strata
