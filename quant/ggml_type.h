// GGML tensor type ids as stored in GGUF files, and the per-type traits table (name, block
// size, bytes per block, reference dequantize/quantize). Ids and sizes are bit-compatible
// with ggml; see docs/FORMATS.md §1.6 and §2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

// Values are the on-disk ids. Gaps are ids ggml removed; they are never valid in a file.
enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,  // known to gguf-py 0.19 (sizes only in Strata)
    Q1_0 = 41,   // known to gguf-py 0.19 (sizes only in Strata)
};

// Reference row conversions (quant/reference.h states their contract): n must be a multiple of
// the type's block size, else std::invalid_argument; buffers aligned to the block struct.
using DequantizeFn = void (*)(const void* src, float* dst, int64_t n);
using QuantizeFn = void (*)(const float* src, void* dst, int64_t n);

struct TypeTraits {
    GgmlType type;
    std::string_view name;  // ggml's spelling: "q4_K", "f16", "iq4_nl"
    int64_t block_size;     // elements per block (1 for plain types)
    size_t type_size;       // bytes per block
    bool is_quantized;
    DequantizeFn dequantize;  // nullptr where Strata has no reference for the type
    QuantizeFn quantize;      // nullptr where Strata has no reference quantizer
};

// Traits of a type id read from a file; nullptr for ids that are unknown or removed
// (4, 5, 31-33, 36-38, 42 and everything from 43 on).
const TypeTraits* find_type_traits(uint32_t id);

// Traits of a known type (never null; throws std::invalid_argument for a value outside the enum).
const TypeTraits& type_traits(GgmlType type);

// Parses a ggml type name ("q4_K", case-insensitive); nullptr if unknown.
const TypeTraits* find_type_traits_by_name(std::string_view name);

// The names of the types Strata can compute with (those with a reference dequantizer),
// comma-separated, for error messages.
std::string dequantizable_type_names();

// Bytes of one row of n elements; throws std::invalid_argument unless n >= 0 is a multiple of
// the block size.
size_t row_bytes(GgmlType type, int64_t n);

}  // namespace strata
