// The per-type traits table: every id ggml (and gguf-py 0.19) defines, with block sizes from
// docs/FORMATS.md §2.1 / GGML_QUANT_SIZES and the reference functions Strata has for it.
#include "quant/ggml_type.h"

#include <array>
#include <stdexcept>
#include <string>

#include "quant/blocks.h"
#include "quant/reference.h"

namespace strata {
namespace {

using G = GgmlType;

// Types without a Strata reference keep dequantize/quantize null; their sizes still let a reader
// walk a file that holds them and reject the tensor by name.
constexpr TypeTraits kTraits[] = {
    {G::F32, "f32", 1, 4, false, dequantize_f32, quantize_f32},
    {G::F16, "f16", 1, 2, false, dequantize_f16, quantize_f16},
    {G::Q4_0, "q4_0", kQk32, sizeof(BlockQ4_0), true, dequantize_q4_0, quantize_q4_0},
    {G::Q4_1, "q4_1", kQk32, sizeof(BlockQ4_1), true, dequantize_q4_1, nullptr},
    {G::Q5_0, "q5_0", kQk32, sizeof(BlockQ5_0), true, dequantize_q5_0, quantize_q5_0},
    {G::Q5_1, "q5_1", kQk32, sizeof(BlockQ5_1), true, dequantize_q5_1, nullptr},
    {G::Q8_0, "q8_0", kQk32, sizeof(BlockQ8_0), true, dequantize_q8_0, quantize_q8_0},
    {G::Q8_1, "q8_1", kQk32, sizeof(BlockQ8_1), true, dequantize_q8_1, quantize_q8_1},
    {G::Q2_K, "q2_K", kQkK, sizeof(BlockQ2_K), true, dequantize_q2_k, nullptr},
    {G::Q3_K, "q3_K", kQkK, sizeof(BlockQ3_K), true, dequantize_q3_k, nullptr},
    {G::Q4_K, "q4_K", kQkK, sizeof(BlockQ4_K), true, dequantize_q4_k, quantize_q4_k},
    {G::Q5_K, "q5_K", kQkK, sizeof(BlockQ5_K), true, dequantize_q5_k, nullptr},
    {G::Q6_K, "q6_K", kQkK, sizeof(BlockQ6_K), true, dequantize_q6_k, quantize_q6_k},
    {G::Q8_K, "q8_K", kQkK, sizeof(BlockQ8_K), true, dequantize_q8_k, quantize_q8_k},
    {G::IQ2_XXS, "iq2_xxs", kQkK, sizeof(BlockIq2Xxs), true, dequantize_iq2_xxs, quantize_iq2_xxs},
    {G::IQ2_XS, "iq2_xs", kQkK, sizeof(BlockIq2Xs), true, dequantize_iq2_xs, quantize_iq2_xs},
    {G::IQ3_XXS, "iq3_xxs", kQkK, sizeof(BlockIq3Xxs), true, dequantize_iq3_xxs, quantize_iq3_xxs},
    {G::IQ1_S, "iq1_s", kQkK, sizeof(BlockIq1S), true, dequantize_iq1_s, quantize_iq1_s},
    {G::IQ4_NL, "iq4_nl", kQk32, sizeof(BlockIq4Nl), true, dequantize_iq4_nl, nullptr},
    {G::IQ3_S, "iq3_s", kQkK, sizeof(BlockIq3S), true, dequantize_iq3_s, quantize_iq3_s},
    {G::IQ2_S, "iq2_s", kQkK, sizeof(BlockIq2S), true, dequantize_iq2_s, quantize_iq2_s},
    {G::IQ4_XS, "iq4_xs", kQkK, sizeof(BlockIq4Xs), true, dequantize_iq4_xs, nullptr},
    {G::I8, "i8", 1, 1, false, nullptr, nullptr},
    {G::I16, "i16", 1, 2, false, nullptr, nullptr},
    {G::I32, "i32", 1, 4, false, nullptr, nullptr},
    {G::I64, "i64", 1, 8, false, nullptr, nullptr},
    {G::F64, "f64", 1, 8, false, nullptr, nullptr},
    {G::IQ1_M, "iq1_m", kQkK, sizeof(BlockIq1M), true, dequantize_iq1_m, quantize_iq1_m},
    {G::BF16, "bf16", 1, 2, false, dequantize_bf16, quantize_bf16},
    {G::TQ1_0, "tq1_0", kQkK, sizeof(BlockTq1_0), true, dequantize_tq1_0, quantize_tq1_0},
    {G::TQ2_0, "tq2_0", kQkK, sizeof(BlockTq2_0), true, dequantize_tq2_0, quantize_tq2_0},
    {G::MXFP4, "mxfp4", kQk32, sizeof(BlockMxfp4), true, dequantize_mxfp4, nullptr},
    {G::NVFP4, "nvfp4", 64, 4 + 32, true, nullptr, nullptr},
    {G::Q1_0, "q1_0", 128, 2 + 16, true, nullptr, nullptr},
};

constexpr uint32_t kIdLimit = 64;  // above every id in the table

// id -> index into kTraits, -1 for gaps.
constexpr std::array<int, kIdLimit> make_index() {
    std::array<int, kIdLimit> index{};
    for (auto& i : index) i = -1;
    for (int i = 0; i < static_cast<int>(std::size(kTraits)); ++i) {
        index[static_cast<uint32_t>(kTraits[i].type)] = i;
    }
    return index;
}
constexpr std::array<int, kIdLimit> kIndex = make_index();

constexpr bool table_is_consistent() {
    for (const TypeTraits& t : kTraits) {
        if (static_cast<uint32_t>(t.type) >= kIdLimit || t.block_size <= 0 || t.type_size == 0) return false;
    }
    // Removed ids must stay unknown: files that use them are rejected.
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u}) {
        if (kIndex[id] != -1) return false;
    }
    return true;
}
static_assert(table_is_consistent(), "every traits entry has a unique in-range id and sane sizes");

char to_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

const TypeTraits* find_type_traits(uint32_t id) {
    if (id >= kIdLimit || kIndex[id] < 0) return nullptr;
    return &kTraits[kIndex[id]];
}

const TypeTraits& type_traits(GgmlType type) {
    const TypeTraits* t = find_type_traits(static_cast<uint32_t>(type));
    if (t == nullptr) {
        throw std::invalid_argument("type_traits: GgmlType value " +
                                    std::to_string(static_cast<uint32_t>(type)) + " is not a known ggml type");
    }
    return *t;
}

const TypeTraits* find_type_traits_by_name(std::string_view name) {
    for (const TypeTraits& t : kTraits) {
        if (t.name.size() != name.size()) continue;
        bool same = true;
        for (size_t i = 0; i < name.size() && same; ++i) same = to_lower(t.name[i]) == to_lower(name[i]);
        if (same) return &t;
    }
    return nullptr;
}

std::string dequantizable_type_names() {
    std::string names;
    for (const TypeTraits& t : kTraits) {
        if (t.dequantize == nullptr) continue;
        if (!names.empty()) names += ", ";
        names += t.name;
    }
    return names;
}

void require_whole_blocks(std::string_view type_name, int64_t n, int64_t block_size) {
    if (n < 0 || n % block_size != 0) {
        throw std::invalid_argument(std::string(type_name) + ": " + std::to_string(n) +
                                    " elements is not a whole number of blocks of " +
                                    std::to_string(block_size) + "; rows must be multiples of the block size");
    }
}

size_t row_bytes(GgmlType type, int64_t n) {
    const TypeTraits& t = type_traits(type);
    require_whole_blocks(t.name, n, t.block_size);
    return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace strata
