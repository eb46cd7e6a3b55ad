// Values of the Jinja interpreter and their Python spellings (jinja_value.h).
#include "engine/chat/jinja/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

namespace strata::jinja {

const Value* Object::find(std::string_view key) const {
    for (const auto& [k, v] : items) {
        if (k == key) return &v;
    }
    return nullptr;
}

void Object::set(std::string key, Value value) {
    for (auto& [k, v] : items) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    items.emplace_back(std::move(key), std::move(value));
}

Value Value::function(std::string name, Function fn) {
    Value v;
    v.type_ = Type::Function;
    v.data_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
    return v;
}

int64_t Value::as_int() const {
    if (type_ == Type::Int) return std::get<int64_t>(data_);
    if (type_ == Type::Bool) return std::get<bool>(data_) ? 1 : 0;
    throw TemplateError(cat("expected an integer, got ", type_name()));
}

double Value::as_double() const {
    if (type_ == Type::Float) return std::get<double>(data_);
    return static_cast<double>(as_int());
}

bool Value::truthy() const {
    switch (type_) {
        case Type::Undefined:
        case Type::None: return false;
        case Type::Bool: return as_bool();
        case Type::Int: return as_int() != 0;
        case Type::Float: return as_double() != 0.0;
        case Type::String: return !as_string().empty();
        case Type::Array: return !as_array().empty();
        case Type::Object: return !as_object().items.empty();
        case Type::Function: return true;
    }
    return false;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
    std::vector<size_t> offsets;
    offsets.reserve(s.size() + 1);
    for (size_t i = 0; i < s.size(); ++i) {
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offsets.push_back(i);
    }
    offsets.push_back(s.size());
    return offsets;
}

int64_t Value::length() const {
    switch (type_) {
        case Type::Undefined: return 0;
        case Type::String: return static_cast<int64_t>(code_point_offsets(as_string()).size()) - 1;
        case Type::Array: return static_cast<int64_t>(as_array().size());
        case Type::Object: return static_cast<int64_t>(as_object().items.size());
        default: throw TemplateError(cat("object of type '", type_name(), "' has no len()"));
    }
}

Array Value::iterate() const {
    switch (type_) {
        case Type::Undefined: return {};
        case Type::Array: return as_array();
        case Type::Object: {
            Array keys;
            for (const auto& kv : as_object().items) keys.emplace_back(kv.first);
            return keys;
        }
        case Type::String: {
            const std::string& s = as_string();
            const std::vector<size_t> at = code_point_offsets(s);
            Array chars;
            for (size_t i = 0; i + 1 < at.size(); ++i) chars.emplace_back(s.substr(at[i], at[i + 1] - at[i]));
            return chars;
        }
        default: throw TemplateError(cat("'", type_name(), "' object is not iterable"));
    }
}

std::string Value::type_name() const {
    switch (type_) {
        case Type::Undefined: return "undefined";
        case Type::None: return "NoneType";
        case Type::Bool: return "bool";
        case Type::Int: return "int";
        case Type::Float: return "float";
        case Type::String: return "str";
        case Type::Array: return "list";
        case Type::Object: return as_object().is_namespace ? "Namespace" : "dict";
        case Type::Function: return "function";
    }
    return "?";
}

Value CallArgs::get(size_t i, std::string_view name, Value fallback) const {
    for (const auto& [k, v] : kwargs) {
        if (k == name) return v;
    }
    if (i < args.size()) return args[i];
    return fallback;
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string s(buf, res.ptr);
    std::string sign;
    if (s[0] == '-') {
        sign = "-";
        s.erase(0, 1);
    }
    const size_t e = s.find('e');
    const int exp = std::stoi(s.substr(e + 1));
    std::string digits = s.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int n = static_cast<int>(digits.size());
    if (exp >= -4 && exp < 16) {
        if (exp < 0) return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
        if (n <= exp + 1) return sign + digits + std::string(static_cast<size_t>(exp + 1 - n), '0') + ".0";
        return sign + digits.substr(0, static_cast<size_t>(exp + 1)) + "." + digits.substr(static_cast<size_t>(exp + 1));
    }
    std::string mant = digits.substr(0, 1);
    if (n > 1) mant += "." + digits.substr(1);
    const int a = std::abs(exp);
    return sign + mant + "e" + (exp < 0 ? "-" : "+") + (a < 10 ? "0" : "") + std::to_string(a);
}

namespace {

std::string py_quote(const std::string& s) {
    const bool dq = s.find('\'') != std::string::npos && s.find('"') == std::string::npos;
    const char q = dq ? '"' : '\'';
    std::string out(1, q);
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == q || c == '\\') out += std::string("\\") + c;
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (u < 0x20 || u == 0x7f) {
            static const char* hex = "0123456789abcdef";
            out += std::string("\\x") + hex[u >> 4] + hex[u & 15];
        } else {
            out += c;
        }
    }
    return out + q;
}

void json_string(std::string& out, const std::string& s) {
    out += '"';
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (u < 0x20) {
                    static const char* hex = "0123456789abcdef";
                    out += std::string("\\u00") + hex[u >> 4] + hex[u & 15];
                } else {
                    out += c;
                }
        }
    }
    out += '"';
}

struct JsonWriter {
    int indent;
    bool sort_keys;
    std::string out;

    void newline(int level) {
        if (indent < 0) return;
        out += '\n';
        out.append(static_cast<size_t>(indent * level), ' ');
    }
    const char* item_sep() const { return indent < 0 ? ", " : ","; }

    void write(const Value& v, int level) {
        switch (v.type()) {
            case Value::Type::None: out += "null"; return;
            case Value::Type::Bool: out += v.as_bool() ? "true" : "false"; return;
            case Value::Type::Int: out += std::to_string(v.as_int()); return;
            case Value::Type::Float: {
                const double d = v.as_double();
                out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : float_repr(d);
                return;
            }
            case Value::Type::String: json_string(out, v.as_string()); return;
            case Value::Type::Array: write_array(v.as_array(), level); return;
            case Value::Type::Object: write_object(v.as_object(), level); return;
            default: throw TemplateError(cat("Object of type ", v.type_name(), " is not JSON serializable"));
        }
    }
    void write_array(const Array& a, int level) {
        if (a.empty()) { out += "[]"; return; }
        out += '[';
        for (size_t i = 0; i < a.size(); ++i) {
            if (i > 0) out += item_sep();
            newline(level + 1);
            write(a[i], level + 1);
        }
        newline(level);
        out += ']';
    }
    void write_object(const Object& o, int level) {
        if (o.items.empty()) { out += "{}"; return; }
        std::vector<const std::pair<std::string, Value>*> items;
        for (const auto& kv : o.items) items.push_back(&kv);
        if (sort_keys) {
            std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
        }
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i > 0) out += item_sep();
            newline(level + 1);
            json_string(out, items[i]->first);
            out += ": ";
            write(items[i]->second, level + 1);
        }
        newline(level);
        out += '}';
    }
};

}  // namespace

std::string to_repr(const Value& v) {
    if (v.is_string()) return py_quote(v.as_string());
    return to_str(v);
}

std::string to_str(const Value& v) {
    switch (v.type()) {
        case Value::Type::Undefined: return "";
        case Value::Type::None: return "None";
        case Value::Type::Bool: return v.as_bool() ? "True" : "False";
        case Value::Type::Int: return std::to_string(v.as_int());
        case Value::Type::Float: return float_repr(v.as_double());
        case Value::Type::String: return v.as_string();
        case Value::Type::Array: {
            const Array& a = v.as_array();
            std::string out = v.is_tuple() ? "(" : "[";
            for (size_t i = 0; i < a.size(); ++i) out += (i ? ", " : "") + to_repr(a[i]);
            if (v.is_tuple()) return out + (a.size() == 1 ? ",)" : ")");
            return out + "]";
        }
        case Value::Type::Object: {
            std::string out = "{";
            bool first = true;
            for (const auto& [k, x] : v.as_object().items) {
                out += (first ? "" : ", ") + py_quote(k) + ": " + to_repr(x);
                first = false;
            }
            return out + "}";
        }
        case Value::Type::Function: return "<function " + v.as_callable().name + ">";
    }
    return "";
}

std::string to_json_text(const Value& v, int indent, bool sort_keys) {
    JsonWriter w{indent, sort_keys, {}};
    w.write(v, 0);
    return std::move(w.out);
}

bool values_equal(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.type() == Value::Type::Float || b.type() == Value::Type::Float) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.type() != b.type()) return false;
    switch (a.type()) {
        case Value::Type::Undefined:
        case Value::Type::None: return true;
        case Value::Type::String: return a.as_string() == b.as_string();
        case Value::Type::Array: {
            const Array& x = a.as_array();
            const Array& y = b.as_array();
            if (x.size() != y.size() || a.is_tuple() != b.is_tuple()) return false;
            for (size_t i = 0; i < x.size(); ++i) {
                if (!values_equal(x[i], y[i])) return false;
            }
            return true;
        }
        case Value::Type::Object: {
            const Object& x = a.as_object();
            const Object& y = b.as_object();
            if (x.items.size() != y.items.size()) return false;
            for (const auto& [k, v] : x.items) {
                const Value* w = y.find(k);
                if (w == nullptr || !values_equal(v, *w)) return false;
            }
            return true;
        }
        case Value::Type::Function: return &a.as_callable() == &b.as_callable();
        default: return false;
    }
}

bool values_less(const Value& a, const Value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.type() == Value::Type::Float || b.type() == Value::Type::Float) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
    if (a.is_array() && b.is_array()) {
        const Array& x = a.as_array();
        const Array& y = b.as_array();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (values_less(x[i], y[i])) return true;
            if (values_less(y[i], x[i])) return false;
        }
        return x.size() < y.size();
    }
    throw TemplateError(cat("'<' not supported between instances of '", a.type_name(), "' and '", b.type_name(), "'"));
}

Value from_json(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value::none();
        case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
        case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            Array a;
            for (const auto& x : j) a.push_back(from_json(x));
            return Value(std::move(a));
        }
        case nlohmann::ordered_json::value_t::object: {
            Object o;
            for (const auto& [k, x] : j.items()) o.items.emplace_back(k, from_json(x));
            return Value(std::move(o));
        }
        default: return Value();
    }
}

}  // namespace strata::jinja
