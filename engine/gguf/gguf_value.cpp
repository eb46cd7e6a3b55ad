// GgufValue: construction, typed access with type and range checks, and display rendering.
// Scalars and fixed-size arrays keep their packed little-endian bytes, exactly as on disk.
#include "engine/gguf/gguf_value.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>

#include "engine/core/error.h"

namespace strata {

// Packed bytes are reinterpreted with memcpy, which is only the on-disk order on a
// little-endian host; big-endian hosts are not supported.
static_assert(std::endian::native == std::endian::little, "Strata assumes a little-endian host");

namespace {

template <typename T>
GgufValue packed_scalar(GgufType type, T v) {
    std::vector<uint8_t> bytes(sizeof(T));
    std::memcpy(bytes.data(), &v, sizeof(T));
    return GgufValue::raw_scalar(type, std::move(bytes));
}

template <typename T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

struct TypeRow {
    std::string_view name;
    size_t size;  // 0 for STRING and ARRAY
    bool is_integer;
};
// Indexed by the on-disk type id (docs/FORMATS.md §1.2).
constexpr TypeRow kTypeRows[] = {
    {"u8", 1, true},      {"i8", 1, true},     {"u16", 2, true},  {"i16", 2, true},
    {"u32", 4, true},     {"i32", 4, true},    {"f32", 4, false}, {"bool", 1, false},
    {"string", 0, false}, {"array", 0, false}, {"u64", 8, true},  {"i64", 8, true},
    {"f64", 8, false},
};

const TypeRow* type_row(GgufType t) {
    const auto id = static_cast<int32_t>(t);
    return gguf_type_valid(id) ? &kTypeRows[id] : nullptr;
}

bool is_integer_type(GgufType t) {
    const TypeRow* row = type_row(t);
    return row != nullptr && row->is_integer;
}

// One fixed-size element, widened without loss.
struct Wide {
    enum Kind { kSigned, kUnsigned, kFloat, kBool } kind;
    int64_t s = 0;   // kSigned, kBool
    uint64_t u = 0;  // kUnsigned
    double f = 0;    // kFloat
};

Wide widen(GgufType t, const uint8_t* p) {
    switch (t) {
        case GgufType::UINT8:
            return {Wide::kUnsigned, 0, load<uint8_t>(p)};
        case GgufType::INT8:
            return {Wide::kSigned, load<int8_t>(p)};
        case GgufType::UINT16:
            return {Wide::kUnsigned, 0, load<uint16_t>(p)};
        case GgufType::INT16:
            return {Wide::kSigned, load<int16_t>(p)};
        case GgufType::UINT32:
            return {Wide::kUnsigned, 0, load<uint32_t>(p)};
        case GgufType::INT32:
            return {Wide::kSigned, load<int32_t>(p)};
        case GgufType::UINT64:
            return {Wide::kUnsigned, 0, load<uint64_t>(p)};
        case GgufType::INT64:
            return {Wide::kSigned, load<int64_t>(p)};
        case GgufType::FLOAT32:
            return {Wide::kFloat, 0, 0, load<float>(p)};
        case GgufType::FLOAT64:
            return {Wide::kFloat, 0, 0, load<double>(p)};
        default:
            return {Wide::kBool, load<uint8_t>(p) != 0};  // BOOL
    }
}

// One packed integer element as int64; false if it is not an integer or does not fit.
bool load_int(GgufType t, const uint8_t* p, int64_t* out) {
    if (!is_integer_type(t)) return false;
    const Wide w = widen(t, p);
    if (w.kind == Wide::kSigned) {
        *out = w.s;
        return true;
    }
    if (w.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(w.u);
    return true;
}

template <typename T>
std::string shortest(T v) {
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), v);
    return std::string(buf, res.ptr);
}

// Renders one fixed-size element.
std::string render_scalar(GgufType t, const uint8_t* p) {
    const Wide w = widen(t, p);
    switch (w.kind) {
        case Wide::kSigned:
            return std::to_string(w.s);
        case Wide::kUnsigned:
            return std::to_string(w.u);
        case Wide::kFloat:
            return t == GgufType::FLOAT32 ? shortest(static_cast<float>(w.f)) : shortest(w.f);
        case Wide::kBool:
            return w.s ? "true" : "false";
    }
    return "?";
}

// Quoted, control characters escaped, cut after max_bytes (at a UTF-8 boundary) with "…".
std::string quote(const std::string& s, size_t max_bytes) {
    size_t end = s.size();
    if (end > max_bytes) {
        end = max_bytes;
        while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80)
            --end;
    }
    std::string out = "\"";
    for (size_t i = 0; i < end; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
    if (end < s.size()) out += "…";
    return out;
}

}  // namespace

std::string gguf_type_name(GgufType type) {
    const TypeRow* row = type_row(type);
    if (row == nullptr) return cat("invalid(", static_cast<int32_t>(type), ")");
    return std::string(row->name);
}

size_t gguf_scalar_size(GgufType type) {
    const TypeRow* row = type_row(type);
    return row == nullptr ? 0 : row->size;
}

bool gguf_type_valid(int32_t id) {
    return id >= 0 && id <= static_cast<int32_t>(GgufType::FLOAT64);
}

GgufValue GgufValue::raw_scalar(GgufType type, std::vector<uint8_t> packed) {
    if (gguf_scalar_size(type) == 0 || packed.size() != gguf_scalar_size(type)) {
        throw ArgumentError(cat("raw_scalar: type ", gguf_type_name(type), " with ", packed.size(),
                                " bytes is not a fixed-size scalar"));
    }
    GgufValue v;
    v.type_ = type;
    v.packed_ = std::move(packed);
    return v;
}

GgufValue GgufValue::u8(uint8_t v) {
    return packed_scalar(GgufType::UINT8, v);
}
GgufValue GgufValue::i8(int8_t v) {
    return packed_scalar(GgufType::INT8, v);
}
GgufValue GgufValue::u16(uint16_t v) {
    return packed_scalar(GgufType::UINT16, v);
}
GgufValue GgufValue::i16(int16_t v) {
    return packed_scalar(GgufType::INT16, v);
}
GgufValue GgufValue::u32(uint32_t v) {
    return packed_scalar(GgufType::UINT32, v);
}
GgufValue GgufValue::i32(int32_t v) {
    return packed_scalar(GgufType::INT32, v);
}
GgufValue GgufValue::f32(float v) {
    return packed_scalar(GgufType::FLOAT32, v);
}
GgufValue GgufValue::boolean(bool v) {
    return packed_scalar(GgufType::BOOL, uint8_t{v});
}
GgufValue GgufValue::u64(uint64_t v) {
    return packed_scalar(GgufType::UINT64, v);
}
GgufValue GgufValue::i64(int64_t v) {
    return packed_scalar(GgufType::INT64, v);
}
GgufValue GgufValue::f64(double v) {
    return packed_scalar(GgufType::FLOAT64, v);
}

GgufValue GgufValue::string(std::string v) {
    GgufValue out;
    out.type_ = GgufType::STRING;
    out.packed_.clear();
    out.str_ = std::move(v);
    return out;
}

GgufValue GgufValue::strings(std::vector<std::string> v) {
    GgufValue out;
    out.type_ = GgufType::ARRAY;
    out.elem_type_ = GgufType::STRING;
    out.count_ = v.size();
    out.packed_.clear();
    out.strings_ = std::move(v);
    return out;
}

GgufValue GgufValue::f32s(const std::vector<float>& v) {
    std::vector<uint8_t> bytes(v.size() * sizeof(float));
    if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
    return scalar_array(GgufType::FLOAT32, std::move(bytes), v.size());
}

GgufValue GgufValue::i32s(const std::vector<int32_t>& v) {
    std::vector<uint8_t> bytes(v.size() * sizeof(int32_t));
    if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
    return scalar_array(GgufType::INT32, std::move(bytes), v.size());
}

GgufValue GgufValue::bools(const std::vector<bool>& v) {
    std::vector<uint8_t> bytes(v.begin(), v.end());
    return scalar_array(GgufType::BOOL, std::move(bytes), v.size());
}

GgufValue GgufValue::scalar_array(GgufType elem_type, std::vector<uint8_t> packed, uint64_t count) {
    const size_t elem = gguf_scalar_size(elem_type);
    if (elem == 0) {
        throw ArgumentError(cat("scalar_array: element type ", gguf_type_name(elem_type),
                                " is not a fixed-size scalar"));
    }
    if (packed.size() / elem != count || packed.size() % elem != 0) {
        throw ArgumentError(cat("scalar_array: ", packed.size(), " bytes for ", count, " × ",
                                gguf_type_name(elem_type)));
    }
    GgufValue out;
    out.type_ = GgufType::ARRAY;
    out.elem_type_ = elem_type;
    out.count_ = count;
    out.packed_ = std::move(packed);
    return out;
}

bool GgufValue::is_integer() const {
    return is_integer_type(type_);
}
bool GgufValue::is_float() const {
    return type_ == GgufType::FLOAT32 || type_ == GgufType::FLOAT64;
}

std::string GgufValue::type_string() const {
    if (!is_array()) return gguf_type_name(type_);
    return cat("array of ", gguf_type_name(elem_type_));
}

[[noreturn]] void GgufValue::wrong_type(std::string_view key, std::string_view expected) const {
    throw FormatError(cat("key '", key, "' has type ", type_string(), ", expected ", expected));
}

int64_t GgufValue::as_int(std::string_view key) const {
    if (!is_integer()) wrong_type(key, "an integer");
    int64_t v = 0;
    if (!load_int(type_, packed_.data(), &v)) {
        throw FormatError(cat("key '", key, "' has value ", load<uint64_t>(packed_.data()),
                              ", which does not fit in a signed 64-bit integer"));
    }
    return v;
}

double GgufValue::as_float(std::string_view key) const {
    if (type_ == GgufType::FLOAT32) return load<float>(packed_.data());
    if (type_ == GgufType::FLOAT64) return load<double>(packed_.data());
    if (type_ == GgufType::UINT64) {
        const uint64_t u = load<uint64_t>(packed_.data());
        const double d = static_cast<double>(u);
        // 2^64 itself is not a uint64, so the round trip must be checked before the cast back.
        if (d < 18446744073709551616.0 && static_cast<uint64_t>(d) == u) return d;
        throw FormatError(cat("key '", key, "' has integer value ", u,
                              ", which a double cannot represent exactly"));
    }
    if (!is_integer()) wrong_type(key, "a float");
    const int64_t i = as_int(key);
    const double d = static_cast<double>(i);
    if (d >= 9223372036854775808.0 || static_cast<int64_t>(d) != i) {
        throw FormatError(cat("key '", key, "' has integer value ", i,
                              ", which a double cannot represent exactly"));
    }
    return d;
}

bool GgufValue::as_bool(std::string_view key) const {
    if (type_ != GgufType::BOOL) wrong_type(key, "bool");
    return packed_[0] != 0;
}

const std::string& GgufValue::as_string(std::string_view key) const {
    if (type_ != GgufType::STRING) wrong_type(key, "string");
    return str_;
}

const std::vector<std::string>& GgufValue::as_strings(std::string_view key) const {
    if (!is_array() || elem_type_ != GgufType::STRING) wrong_type(key, "array of string");
    return strings_;
}

std::vector<int64_t> GgufValue::as_ints(std::string_view key) const {
    if (!is_array() || !is_integer_type(elem_type_)) wrong_type(key, "array of integers");
    const size_t elem = gguf_scalar_size(elem_type_);
    std::vector<int64_t> out(count_);
    for (uint64_t i = 0; i < count_; ++i) {
        if (!load_int(elem_type_, packed_.data() + i * elem, &out[i])) {
            throw FormatError(cat("key '", key, "' element ", i, " has value ",
                                  load<uint64_t>(packed_.data() + i * elem),
                                  ", which does not fit in a signed 64-bit integer"));
        }
    }
    return out;
}

std::vector<float> GgufValue::as_floats(std::string_view key) const {
    if (!is_array() || (elem_type_ != GgufType::FLOAT32 && elem_type_ != GgufType::FLOAT64)) {
        wrong_type(key, "array of f32 or f64");
    }
    std::vector<float> out(count_);
    for (uint64_t i = 0; i < count_; ++i) {
        out[i] = elem_type_ == GgufType::FLOAT32
                     ? load<float>(packed_.data() + i * 4)
                     : static_cast<float>(load<double>(packed_.data() + i * 8));
    }
    return out;
}

std::vector<bool> GgufValue::as_bools(std::string_view key) const {
    if (!is_array() || elem_type_ != GgufType::BOOL) wrong_type(key, "array of bool");
    std::vector<bool> out(count_);
    for (uint64_t i = 0; i < count_; ++i)
        out[i] = packed_[i] != 0;
    return out;
}

std::string GgufValue::to_display_string(size_t max_items) const {
    constexpr size_t kMaxStringBytes = 120;
    if (type_ == GgufType::STRING) return quote(str_, kMaxStringBytes);
    if (!is_array()) return render_scalar(type_, packed_.data());

    std::string out = cat("[", count_, " × ", gguf_type_name(elem_type_));
    const uint64_t shown = std::min<uint64_t>(count_, max_items);
    const size_t elem = gguf_scalar_size(elem_type_);
    for (uint64_t i = 0; i < shown; ++i) {
        out += i == 0 ? ": " : ", ";
        out += elem_type_ == GgufType::STRING
                   ? quote(strings_[i], kMaxStringBytes / 4)
                   : render_scalar(elem_type_, packed_.data() + i * elem);
    }
    if (shown < count_) out += shown == 0 ? ": …" : ", …";
    return out + "]";
}

}  // namespace strata
