// Attribute and item access, slicing, Python string and dict methods, and the global
// functions (range, namespace, dict, raise_exception, strftime_now) of the Jinja interpreter.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>

#include "engine/chat/jinja/jinja_eval.h"

namespace strata::jinja {
namespace {

constexpr std::string_view kPyWhitespace = " \t\n\r\f\v";

std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right) {
    const std::string set = chars.is_string() ? chars.as_string() : std::string(kPyWhitespace);
    size_t b = 0;
    size_t e = s.size();
    if (left) while (b < e && set.find(s[b]) != std::string::npos) ++b;
    if (right) while (e > b && set.find(s[e - 1]) != std::string::npos) --e;
    return s.substr(b, e - b);
}

Value split(const std::string& s, const Value& sep_v, int64_t maxsplit) {
    Array parts;
    if (sep_v.is_string()) {
        const std::string& sep = sep_v.as_string();
        if (sep.empty()) throw TemplateError("split(): empty separator");
        size_t at = 0;
        for (;;) {
            const size_t hit = s.find(sep, at);
            if (hit == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit)) break;
            parts.emplace_back(s.substr(at, hit - at));
            at = hit + sep.size();
        }
        parts.emplace_back(s.substr(at));
        return Value(std::move(parts));
    }
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && kPyWhitespace.find(s[i]) != std::string_view::npos) ++i;
        if (i >= s.size()) break;
        if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
            size_t e = s.size();
            while (e > i && kPyWhitespace.find(s[e - 1]) != std::string_view::npos) --e;
            parts.emplace_back(s.substr(i, e - i));
            break;
        }
        size_t j = i;
        while (j < s.size() && kPyWhitespace.find(s[j]) == std::string_view::npos) ++j;
        parts.emplace_back(s.substr(i, j - i));
        i = j;
    }
    return Value(std::move(parts));
}

std::string ascii_case(std::string s, bool upper) {
    for (char& c : s) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Python's str.title() for ASCII letters: upper after a non-letter, lower after a letter.
std::string title_case(std::string s) {
    bool prev_letter = false;
    for (char& c : s) {
        const auto u = static_cast<unsigned char>(c);
        const bool letter = std::isalpha(u) != 0;
        if (letter) c = static_cast<char>(prev_letter ? std::tolower(u) : std::toupper(u));
        prev_letter = letter;
    }
    return s;
}

Value string_method(Evaluator& ev, const std::string& s, const std::string& name, CallArgs& a) {
    auto str_arg = [&](size_t i, std::string_view what) {
        const Value v = a.get(i, what);
        if (!v.is_string()) throw TemplateError(cat("str.", name, "() needs a string argument, got ", v.type_name()));
        return v.as_string();
    };
    if (name == "startswith" || name == "endswith") {
        const Value p = a.get(0, "prefix");
        Array options = p.is_array() ? p.as_array() : Array{p};
        for (const Value& o : options) {
            if (!o.is_string()) throw TemplateError(cat("str.", name, "() needs a string, got ", o.type_name()));
            if (name == "startswith" ? s.starts_with(o.as_string()) : s.ends_with(o.as_string())) return Value(true);
        }
        return Value(false);
    }
    if (name == "strip") return Value(strip_chars(s, a.get(0, "chars"), true, true));
    if (name == "lstrip") return Value(strip_chars(s, a.get(0, "chars"), true, false));
    if (name == "rstrip") return Value(strip_chars(s, a.get(0, "chars"), false, true));
    if (name == "split") {
        const Value m = a.get(1, "maxsplit", Value(-1));
        return split(s, a.get(0, "sep"), m.as_int());
    }
    if (name == "upper") return Value(ascii_case(s, true));
    if (name == "lower") return Value(ascii_case(s, false));
    if (name == "title") return Value(title_case(s));
    if (name == "capitalize") {
        std::string r = ascii_case(s, false);
        if (!r.empty()) r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
        return Value(std::move(r));
    }
    if (name == "replace") {
        CallArgs fa;
        fa.args = {a.get(0, "old"), a.get(1, "new")};
        if (a.args.size() > 2) fa.args.push_back(a.args[2]);
        return apply_filter(ev, "replace", Value(s), fa);
    }
    if (name == "find") {
        const size_t hit = s.find(str_arg(0, "sub"));
        if (hit == std::string::npos) return Value(-1);
        return Value(static_cast<int64_t>(code_point_offsets(s.substr(0, hit)).size()) - 1);
    }
    if (name == "count") {
        const std::string sub = str_arg(0, "sub");
        if (sub.empty()) return Value(Value(s).length() + 1);
        int64_t n = 0;
        for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
        return Value(n);
    }
    if (name == "join") {
        CallArgs fa;
        fa.args = {Value(s)};
        return apply_filter(ev, "join", a.get(0, "iterable"), fa);
    }
    if (name == "splitlines") {
        Array lines;
        size_t at = 0;
        while (at < s.size()) {
            size_t e = s.find('\n', at);
            if (e == std::string::npos) e = s.size();
            std::string line = s.substr(at, e - at);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            lines.emplace_back(std::move(line));
            at = e + 1;
        }
        return Value(std::move(lines));
    }
    if (name == "isdigit" || name == "isalpha" || name == "isspace") {
        if (s.empty()) return Value(false);
        return Value(std::all_of(s.begin(), s.end(), [&](char c) {
            const auto u = static_cast<unsigned char>(c);
            return name == "isdigit" ? std::isdigit(u) != 0 : name == "isalpha" ? std::isalpha(u) != 0 : std::isspace(u) != 0;
        }));
    }
    throw TemplateError(cat("str has no method '", name, "'"));
}

bool is_string_method(const std::string& n) {
    static const char* kNames[] = {"startswith", "endswith", "strip", "lstrip", "rstrip", "split", "upper",
                                   "lower", "title", "capitalize", "replace", "find", "count", "join",
                                   "splitlines", "isdigit", "isalpha", "isspace"};
    return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* k) { return n == k; });
}

Value dict_method(const Value& obj, const std::string& name, CallArgs& a) {
    const Object& o = obj.as_object();
    if (name == "items") {
        Array r;
        for (const auto& [k, v] : o.items) r.push_back(Value::tuple(Array{Value(k), v}));
        return Value(std::move(r));
    }
    if (name == "keys" || name == "values") {
        Array r;
        for (const auto& [k, v] : o.items) r.push_back(name == "keys" ? Value(k) : v);
        return Value(std::move(r));
    }
    const Value key = a.get(0, "key");
    const Value* hit = key.is_string() ? o.find(key.as_string()) : nullptr;
    return hit ? *hit : a.get(1, "default", Value::none());
}

int64_t normalize_index(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

}  // namespace

Value get_attribute(Evaluator& ev, const Value& obj, const std::string& name) {
    if (obj.is_undefined()) throw TemplateError(cat("cannot read attribute '", name, "' of an undefined value"));
    if (obj.is_object()) {
        if (!obj.as_object().is_namespace && (name == "items" || name == "keys" || name == "values" || name == "get")) {
            return Value::function("dict." + name, [obj, name](CallArgs& a) { return dict_method(obj, name, a); });
        }
        const Value* v = obj.as_object().find(name);
        return v ? *v : Value();
    }
    if (obj.is_string() && is_string_method(name)) {
        Evaluator* evp = &ev;
        return Value::function("str." + name, [evp, s = obj.as_string(), name](CallArgs& a) {
            return string_method(*evp, s, name, a);
        });
    }
    if (obj.is_array() && (name == "append" || name == "pop" || name == "insert" || name == "extend")) {
        throw TemplateError(cat("list.", name, "() is not allowed: templates cannot modify lists"));
    }
    return Value();
}

Value get_item(Evaluator& ev, const Value& obj, const Value& key) {
    if (obj.is_undefined()) throw TemplateError(cat("cannot index an undefined value with ", to_repr(key)));
    if (obj.is_object()) {
        if (key.is_string()) {
            const Value* v = obj.as_object().find(key.as_string());
            return v ? *v : get_attribute(ev, obj, key.as_string());
        }
        return Value();
    }
    if ((obj.is_array() || obj.is_string()) && key.is_number() && key.type() != Value::Type::Float) {
        if (obj.is_array()) {
            const Array& a = obj.as_array();
            const int64_t i = normalize_index(key.as_int(), static_cast<int64_t>(a.size()));
            return (i >= 0 && i < static_cast<int64_t>(a.size())) ? a[static_cast<size_t>(i)] : Value();
        }
        const std::string& s = obj.as_string();
        const std::vector<size_t> at = code_point_offsets(s);
        const int64_t n = static_cast<int64_t>(at.size()) - 1;
        const int64_t i = normalize_index(key.as_int(), n);
        if (i < 0 || i >= n) return Value();
        return Value(s.substr(at[static_cast<size_t>(i)], at[static_cast<size_t>(i) + 1] - at[static_cast<size_t>(i)]));
    }
    if (key.is_string()) return get_attribute(ev, obj, key.as_string());
    return Value();
}

Value slice_value(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
    auto opt = [](const Value& v, const char* what) -> std::optional<int64_t> {
        if (v.is_undefined() || v.is_none()) return std::nullopt;
        if (!v.is_number() || v.type() == Value::Type::Float) throw TemplateError(cat("slice ", what, " must be an integer"));
        return v.as_int();
    };
    const int64_t step = opt(step_v, "step").value_or(1);
    if (step == 0) throw TemplateError("slice step cannot be zero");
    const bool is_str = obj.is_string();
    if (!is_str && !obj.is_array()) throw TemplateError(cat("cannot slice a ", obj.type_name()));
    const std::vector<size_t> at = is_str ? code_point_offsets(obj.as_string()) : std::vector<size_t>{};
    const int64_t n = is_str ? static_cast<int64_t>(at.size()) - 1 : static_cast<int64_t>(obj.as_array().size());
    auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
        if (!v) return fallback;
        int64_t i = *v < 0 ? *v + n : *v;
        const int64_t lo = step > 0 ? 0 : -1;
        const int64_t hi = step > 0 ? n : n - 1;
        return std::clamp(i, lo, hi);
    };
    const int64_t start = clamp(opt(start_v, "start"), step > 0 ? 0 : n - 1);
    const int64_t stop = clamp(opt(stop_v, "stop"), step > 0 ? n : -1);
    std::string s;
    Array a;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (is_str) s += obj.as_string().substr(at[static_cast<size_t>(i)], at[static_cast<size_t>(i) + 1] - at[static_cast<size_t>(i)]);
        else a.push_back(obj.as_array()[static_cast<size_t>(i)]);
    }
    return is_str ? Value(std::move(s)) : Value(std::move(a));
}

Value builtin_global(Evaluator& ev, const std::string& name) {
    Evaluator* evp = &ev;
    if (name == "range") {
        return Value::function("range", [evp](CallArgs& a) {
            int64_t start = 0, stop = 0, step = 1;
            if (a.args.size() == 1) stop = a.args[0].as_int();
            else if (a.args.size() >= 2) { start = a.args[0].as_int(); stop = a.args[1].as_int(); }
            if (a.args.size() >= 3) step = a.args[2].as_int();
            if (a.args.empty() || a.args.size() > 3) throw TemplateError("range() takes 1 to 3 integers");
            if (step == 0) throw TemplateError("range() step must not be zero");
            Array r;
            for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                evp->step();
                evp->check_size(r.size() + 1);
                r.emplace_back(i);
            }
            return Value(std::move(r));
        });
    }
    if (name == "namespace" || name == "dict") {
        return Value::function(name, [name](CallArgs& a) {
            Object o;
            o.is_namespace = name == "namespace";
            for (const Value& pos : a.args) {
                if (!pos.is_object()) throw TemplateError(cat(name, "() takes a dict or keyword arguments"));
                for (const auto& [k, v] : pos.as_object().items) o.set(k, v);
            }
            for (auto& [k, v] : a.kwargs) o.set(k, v);
            return Value(std::move(o));
        });
    }
    if (name == "raise_exception") {
        return Value::function(name, [](CallArgs& a) -> Value {
            throw TemplateError(cat("the template raised an exception: ", to_str(a.get(0, "message"))));
        });
    }
    if (name == "strftime_now") {
        return Value::function(name, [evp](CallArgs& a) {
            const Value f = a.get(0, "format");
            if (!f.is_string()) throw TemplateError("strftime_now() needs a format string");
            const std::time_t t = evp->limits().now.value_or(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()));
            std::tm tm{};
            localtime_r(&t, &tm);
            char buf[256];
            const size_t n = std::strftime(buf, sizeof buf, f.as_string().c_str(), &tm);
            return Value(std::string(buf, n));
        });
    }
    return Value();
}

}  // namespace strata::jinja
