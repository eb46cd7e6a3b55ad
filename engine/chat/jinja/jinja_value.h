// The values a Jinja template computes with, modelled on the Python objects jinja2 uses:
// undefined, None, bool, int, float, str, list, dict (insertion-ordered), namespace and callables.
// Lists, dicts and functions are shared (copying a Value copies a pointer), so a namespace set
// inside a loop is seen outside it, as in Python. Strings are UTF-8; length and slicing count
// code points as Python does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/core/error.h"

namespace strata::jinja {

// A template that cannot be parsed or rendered (syntax, undefined use, limits, raise_exception).
class TemplateError : public FormatError {
public:
    using FormatError::FormatError;
};

class Value;
struct CallArgs;
using Array = std::vector<Value>;
using Function = std::function<Value(CallArgs&)>;

struct Object {
    std::vector<std::pair<std::string, Value>> items;  // insertion order, unique keys
    bool is_namespace = false;                          // namespace(): attributes may be set

    const Value* find(std::string_view key) const;
    void set(std::string key, Value value);
};

struct Callable {
    std::string name;
    Function fn;
};

class Value {
public:
    enum class Type { Undefined, None, Bool, Int, Float, String, Array, Object, Function };

    Value() = default;  // undefined
    static Value none() { Value v; v.data_ = std::monostate{}; v.type_ = Type::None; return v; }
    Value(bool b) : type_(Type::Bool), data_(b) {}
    Value(int64_t i) : type_(Type::Int), data_(i) {}
    Value(int i) : Value(static_cast<int64_t>(i)) {}
    Value(double d) : type_(Type::Float), data_(d) {}
    Value(std::string s) : type_(Type::String), data_(std::move(s)) {}
    Value(const char* s) : Value(std::string(s)) {}
    Value(Array a) : type_(Type::Array), data_(std::make_shared<Array>(std::move(a))) {}
    Value(Object o) : type_(Type::Object), data_(std::make_shared<Object>(std::move(o))) {}
    static Value function(std::string name, Function fn);
    // A Python tuple: a list that prints as (a, b) and never equals a list.
    static Value tuple(Array a) { Value v(std::move(a)); v.tuple_ = true; return v; }
    bool is_tuple() const { return tuple_; }

    Type type() const { return type_; }
    bool is_undefined() const { return type_ == Type::Undefined; }
    bool is_none() const { return type_ == Type::None; }
    bool is_bool() const { return type_ == Type::Bool; }
    bool is_int() const { return type_ == Type::Int; }
    bool is_number() const { return type_ == Type::Int || type_ == Type::Float || type_ == Type::Bool; }
    bool is_string() const { return type_ == Type::String; }
    bool is_array() const { return type_ == Type::Array; }
    bool is_object() const { return type_ == Type::Object; }
    bool is_function() const { return type_ == Type::Function; }

    bool as_bool() const { return std::get<bool>(data_); }
    int64_t as_int() const;    // bool or int; throws TemplateError otherwise
    double as_double() const;  // any number
    const std::string& as_string() const { return std::get<std::string>(data_); }
    const Array& as_array() const { return *std::get<std::shared_ptr<Array>>(data_); }
    const Object& as_object() const { return *std::get<std::shared_ptr<Object>>(data_); }
    Object& object_for_update() const { return *std::get<std::shared_ptr<Object>>(data_); }
    const Callable& as_callable() const { return *std::get<std::shared_ptr<Callable>>(data_); }

    bool truthy() const;
    // Python's len(): code points of a string, items of a list or dict. Throws for others.
    int64_t length() const;
    // The elements a for loop visits: list items, dict keys, string code points.
    Array iterate() const;
    std::string type_name() const;

private:
    Type type_ = Type::Undefined;
    bool tuple_ = false;
    std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<Array>,
                 std::shared_ptr<Object>, std::shared_ptr<Callable>>
        data_;
};

struct CallArgs {
    std::vector<Value> args;
    std::vector<std::pair<std::string, Value>> kwargs;

    // The i-th positional argument or the keyword `name`, else `fallback`.
    Value get(size_t i, std::string_view name, Value fallback = Value()) const;
};

// Python's str(): None, True, 1.5, 'quoted' inside lists and dicts, ['a', 1], {'k': 'v'}.
std::string to_str(const Value& v);
// Python's repr() (strings quoted).
std::string to_repr(const Value& v);
// Python's repr of a float: shortest round-trip digits, 1e-05, 1e+16, 1.0.
std::string float_repr(double d);
// json.dumps(v, ensure_ascii=False, indent=indent (<0: none), sort_keys=sort_keys).
std::string to_json_text(const Value& v, int indent, bool sort_keys);

// Python ==, with 1 == 1.0 == True, deep for lists and dicts.
bool values_equal(const Value& a, const Value& b);
// Python <: numbers with numbers, strings with strings, lists item by item; else TemplateError.
bool values_less(const Value& a, const Value& b);

// From parsed JSON (objects keep their key order when given an ordered_json).
Value from_json(const nlohmann::ordered_json& j);

// UTF-8 helpers: byte offsets of each code point start (plus the end), and one code point.
std::vector<size_t> code_point_offsets(std::string_view s);

}  // namespace strata::jinja
