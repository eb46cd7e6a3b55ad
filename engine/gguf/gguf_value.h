// A GGUF metadata value: one of the 13 value types of the format, scalars by value, arrays
// decoded. Typed accessors check the stored type and throw FormatError naming the key, so a
// wrong key type in a file becomes a clear message instead of a misread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace strata {

// On-disk value type ids (docs/FORMATS.md §1.2).
enum class GgufType : int32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};

// "u32", "string", "array"...; "invalid(N)" for unknown ids.
std::string gguf_type_name(GgufType type);
// Size in bytes of a fixed-size scalar type; 0 for STRING and ARRAY.
size_t gguf_scalar_size(GgufType type);
// True for the 13 type ids the format defines (0..12).
bool gguf_type_valid(int32_t id);

class GgufValue {
public:
    GgufValue() = default;

    // Scalars.
    static GgufValue u8(uint8_t v);
    static GgufValue i8(int8_t v);
    static GgufValue u16(uint16_t v);
    static GgufValue i16(int16_t v);
    static GgufValue u32(uint32_t v);
    static GgufValue i32(int32_t v);
    static GgufValue f32(float v);
    static GgufValue boolean(bool v);
    static GgufValue string(std::string v);
    static GgufValue u64(uint64_t v);
    static GgufValue i64(int64_t v);
    static GgufValue f64(double v);
    // A fixed-size scalar from its packed little-endian bytes (gguf_scalar_size(type) of them).
    static GgufValue raw_scalar(GgufType type, std::vector<uint8_t> packed);
    // Arrays.
    static GgufValue strings(std::vector<std::string> v);
    static GgufValue f32s(const std::vector<float>& v);
    static GgufValue i32s(const std::vector<int32_t>& v);
    static GgufValue bools(const std::vector<bool>& v);
    // An array of fixed-size scalars given as packed little-endian bytes (count elements).
    static GgufValue scalar_array(GgufType elem_type, std::vector<uint8_t> packed, uint64_t count);

    GgufType type() const { return type_; }
    bool is_array() const { return type_ == GgufType::ARRAY; }
    GgufType array_type() const { return elem_type_; }  // element type when is_array()
    uint64_t array_size() const { return count_; }      // element count when is_array()
    bool is_integer() const;  // any of the 8 integer scalar types
    bool is_float() const;    // FLOAT32 or FLOAT64
    // "u32", "string", "array of i32": the type as error messages name it.
    std::string type_string() const;

    // Typed access. `key` only names the value in the error message.
    int64_t as_int(std::string_view key) const;    // any integer scalar type, range-checked
    double as_float(std::string_view key) const;   // FLOAT32, FLOAT64 (integers too, exactly)
    bool as_bool(std::string_view key) const;      // BOOL
    const std::string& as_string(std::string_view key) const;          // STRING
    const std::vector<std::string>& as_strings(std::string_view key) const;  // ARRAY of STRING
    std::vector<int64_t> as_ints(std::string_view key) const;   // ARRAY of any integer type
    std::vector<float> as_floats(std::string_view key) const;   // ARRAY of FLOAT32/FLOAT64
    std::vector<bool> as_bools(std::string_view key) const;     // ARRAY of BOOL

    // Raw packed little-endian bytes of a scalar or of a fixed-size-element array.
    const std::vector<uint8_t>& packed() const { return packed_; }
    // A short human-readable rendering (arrays abbreviated), for inspect.
    std::string to_display_string(size_t max_items = 8) const;

private:
    [[noreturn]] void wrong_type(std::string_view key, std::string_view expected) const;

    // A default-constructed value is u8 0, so every accessor sees consistent bytes.
    GgufType type_ = GgufType::UINT8;
    GgufType elem_type_ = GgufType::UINT8;
    uint64_t count_ = 0;
    std::vector<uint8_t> packed_ = std::vector<uint8_t>(1, 0);  // fixed-size scalars, arrays
    std::string str_;                   // STRING
    std::vector<std::string> strings_;  // ARRAY of STRING
};

}  // namespace strata
