// Jinja filters (`value | name(args)`) and tests (`value is name(args)`) that chat templates
// use, with jinja2's meanings; tojson is Hugging Face's (ensure_ascii=False, key order kept).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>

#include "engine/chat/jinja/jinja_eval.h"

namespace strata::jinja {
namespace {

std::string call_str_method(Evaluator& ev, const std::string& s, const std::string& method, CallArgs& args) {
    const Value fn = get_attribute(ev, Value(s), method);
    return to_str(fn.as_callable().fn(args));
}

// attribute "a.b" (dotted, integers index lists) of an item, as jinja2's make_attrgetter.
Value attr_path(Evaluator& ev, Value v, const std::string& path) {
    size_t at = 0;
    while (at <= path.size()) {
        size_t dot = path.find('.', at);
        if (dot == std::string::npos) dot = path.size();
        const std::string part = path.substr(at, dot - at);
        const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
        if (v.is_undefined()) return v;
        v = digits ? get_item(ev, v, Value(static_cast<int64_t>(std::stoll(part)))) : get_item(ev, v, Value(part));
        at = dot + 1;
    }
    return v;
}

Value replace(Evaluator& ev, const std::string& s, const std::string& from, const std::string& to, int64_t count) {
    std::string out;
    int64_t done = 0;
    if (from.empty()) {
        const std::vector<size_t> at = code_point_offsets(s);
        for (size_t i = 0; i + 1 < at.size(); ++i) {
            if (count < 0 || done < count) { out += to; ++done; }
            out += s.substr(at[i], at[i + 1] - at[i]);
            ev.check_size(out.size());
        }
        if (count < 0 || done < count) out += to;
        return Value(std::move(out));
    }
    size_t pos = 0;
    for (size_t hit = s.find(from); hit != std::string::npos && (count < 0 || done < count); hit = s.find(from, pos)) {
        out.append(s, pos, hit - pos);
        out += to;
        pos = hit + from.size();
        ++done;
        ev.check_size(out.size());
    }
    out.append(s, pos);
    ev.check_size(out.size());
    return Value(std::move(out));
}

// select/reject/selectattr/rejectattr: args are [attribute,] test name, test arguments.
Value select_items(Evaluator& ev, const Value& seq, CallArgs& a, bool by_attr, bool keep) {
    size_t i = 0;
    std::string attr;
    if (by_attr) {
        if (a.args.empty() || !a.args[0].is_string()) throw TemplateError("selectattr/rejectattr need an attribute name");
        attr = a.args[i++].as_string();
    }
    std::string test;
    if (i < a.args.size()) {
        if (!a.args[i].is_string()) throw TemplateError("select/reject need a test name");
        test = a.args[i++].as_string();
    }
    CallArgs test_args;
    test_args.args.assign(a.args.begin() + static_cast<std::ptrdiff_t>(i), a.args.end());
    Array out;
    for (const Value& item : seq.iterate()) {
        ev.step();
        const Value v = by_attr ? attr_path(ev, item, attr) : item;
        const bool pass = test.empty() ? v.truthy() : apply_test(test, v, test_args);
        if (pass == keep) out.push_back(item);
    }
    return Value(std::move(out));
}

Value sort_key(const Value& v, bool case_sensitive) {
    if (!case_sensitive && v.is_string()) {
        std::string s = v.as_string();
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return Value(std::move(s));
    }
    return v;
}

Value sorted(Evaluator& ev, const Value& seq, CallArgs& a) {
    const bool reverse = a.get(0, "reverse", Value(false)).truthy();
    const bool cs = a.get(1, "case_sensitive", Value(false)).truthy();
    const Value attr = a.get(2, "attribute");
    Array items = seq.iterate();
    auto key = [&](const Value& v) { return sort_key(attr.is_string() ? attr_path(ev, v, attr.as_string()) : v, cs); };
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        return reverse ? values_less(key(y), key(x)) : values_less(key(x), key(y));
    });
    return Value(std::move(items));
}

std::string indent(std::string s, const Value& width, bool first, bool blank) {
    const std::string ind = width.is_string() ? width.as_string() : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
    std::vector<std::string> lines;
    size_t at = 0;
    while (at < s.size()) {
        size_t e = s.find('\n', at);
        if (e == std::string::npos) e = s.size();
        lines.push_back(s.substr(at, e - at));
        at = e + 1;
    }
    std::string rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + ((blank || !lines[i].empty()) ? ind : "") + lines[i];
    return first ? ind + rv : rv;
}

Value number_filter(const Value& v, CallArgs& a, bool to_int) {
    const Value def = a.get(0, "default", to_int ? Value(0) : Value(0.0));
    if (v.is_number()) return to_int ? Value(static_cast<int64_t>(v.as_double())) : Value(v.as_double());
    if (v.is_string()) {
        try {
            size_t used = 0;
            const std::string s = v.as_string();
            if (to_int) {
                const int64_t i = std::stoll(s, &used);
                if (used == s.size()) return Value(i);
            } else {
                const double d = std::stod(s, &used);
                if (used == s.size()) return Value(d);
            }
        } catch (const std::exception&) {
        }
    }
    return def;
}

// The filters on text and single values; nullopt for a name that is not one of them.
std::optional<Value> text_filter(Evaluator& ev, const std::string& name, const Value& v, CallArgs& a) {
    if (name == "trim") return Value(call_str_method(ev, to_str(v), "strip", a));
    if (name == "length" || name == "count") return Value(v.length());
    if (name == "string" || name == "safe") return v.is_string() ? v : Value(to_str(v));
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
        return Value(call_str_method(ev, to_str(v), name, a));
    }
    if (name == "tojson") {
        const Value ind = a.get(0, "indent", Value::none());
        const int n = ind.is_none() ? -1 : static_cast<int>(ind.as_int());
        std::string s = to_json_text(v, n, a.get(1, "sort_keys", Value(false)).truthy());
        ev.check_size(s.size());
        return Value(std::move(s));
    }
    if (name == "replace") {
        const Value from = a.get(0, "old");
        const Value to = a.get(1, "new");
        const Value count = a.get(2, "count", Value::none());
        return replace(ev, to_str(v), to_str(from), to_str(to), count.is_none() ? -1 : count.as_int());
    }
    if (name == "default" || name == "d") {
        const bool boolean = a.get(1, "boolean", Value(false)).truthy();
        if (v.is_undefined() || (boolean && !v.truthy())) return a.get(0, "default_value", Value(""));
        return v;
    }
    if (name == "join") {
        const Value sep = a.get(0, "d", Value(""));
        const Value attr = a.get(1, "attribute");
        std::string out;
        bool first = true;
        for (const Value& item : v.iterate()) {
            out += (first ? "" : to_str(sep)) + to_str(attr.is_string() ? attr_path(ev, item, attr.as_string()) : item);
            first = false;
            ev.check_size(out.size());
        }
        return Value(std::move(out));
    }
    if (name == "items") {
        if (v.is_undefined()) return Value(Array{});
        if (!v.is_object()) throw TemplateError(cat("items filter needs a dict, got ", v.type_name()));
        Array r;
        for (const auto& [k, x] : v.as_object().items) r.push_back(Value::tuple(Array{Value(k), x}));
        return Value(std::move(r));
    }
    if (name == "int") return number_filter(v, a, true);
    if (name == "float") return number_filter(v, a, false);
    if (name == "abs") {
        if (!v.is_number()) throw TemplateError(cat("abs needs a number, got ", v.type_name()));
        return v.type() == Value::Type::Float ? Value(std::fabs(v.as_double())) : Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (name == "round") {
        const double p = std::pow(10.0, static_cast<double>(a.get(0, "precision", Value(0)).as_int()));
        return Value(std::nearbyint(v.as_double() * p) / p);
    }
    return std::nullopt;
}

}  // namespace

Value apply_filter(Evaluator& ev, const std::string& name, const Value& v, CallArgs& a) {
    if (std::optional<Value> done = text_filter(ev, name, v, a)) return *std::move(done);
    if (name == "selectattr" || name == "rejectattr") return select_items(ev, v, a, true, name == "selectattr");
    if (name == "select" || name == "reject") return select_items(ev, v, a, false, name == "select");
    if (name == "first" || name == "last") {
        const Array items = v.iterate();
        if (items.empty()) return Value();
        return name == "first" ? items.front() : items.back();
    }
    if (name == "list") return Value(v.iterate());
    if (name == "reverse") {
        if (v.is_string()) return slice_value(v, Value(), Value(), Value(-1));
        Array items = v.iterate();
        std::reverse(items.begin(), items.end());
        return Value(std::move(items));
    }
    if (name == "sort") return sorted(ev, v, a);
    if (name == "unique") {
        Array out;
        for (const Value& x : v.iterate()) {
            ev.step();
            if (std::none_of(out.begin(), out.end(), [&](const Value& y) { return values_equal(sort_key(x, false), sort_key(y, false)); })) out.push_back(x);
        }
        return Value(std::move(out));
    }
    if (name == "min" || name == "max") {
        CallArgs sa;
        sa.kwargs = {{"reverse", Value(name == "max")}};
        const Value s = sorted(ev, v, sa);
        return s.as_array().empty() ? Value() : s.as_array().front();
    }
    if (name == "sum") {
        Value total = a.get(1, "start", Value(0));
        for (const Value& x : v.iterate()) {
            if (!x.is_number() || !total.is_number()) throw TemplateError("sum filter needs numbers");
            total = (x.type() == Value::Type::Float || total.type() == Value::Type::Float) ? Value(total.as_double() + x.as_double())
                                                                                              : Value(total.as_int() + x.as_int());
        }
        return total;
    }
    if (name == "map") {
        const Value attr = a.get(99, "attribute");
        Array out;
        if (attr.is_string()) {
            const Value def = a.get(99, "default");
            for (const Value& x : v.iterate()) {
                Value y = attr_path(ev, x, attr.as_string());
                out.push_back(y.is_undefined() && !def.is_undefined() ? def : y);
            }
            return Value(std::move(out));
        }
        if (a.args.empty() || !a.args[0].is_string()) throw TemplateError("map needs a filter name or attribute=");
        const std::string filter = a.args[0].as_string();
        CallArgs rest;
        rest.args.assign(a.args.begin() + 1, a.args.end());
        rest.kwargs = a.kwargs;
        for (const Value& x : v.iterate()) {
            ev.step();
            out.push_back(apply_filter(ev, filter, x, rest));
        }
        return Value(std::move(out));
    }
    if (name == "indent") {
        return Value(indent(to_str(v), a.get(0, "width", Value(4)), a.get(1, "first", Value(false)).truthy(),
                            a.get(2, "blank", Value(false)).truthy()));
    }
    if (name == "dictsort") {
        if (!v.is_object()) throw TemplateError("dictsort needs a dict");
        Array items = apply_filter(ev, "items", v, a).as_array();
        std::stable_sort(items.begin(), items.end(), [](const Value& x, const Value& y) {
            return values_less(sort_key(x.as_array()[0], false), sort_key(y.as_array()[0], false));
        });
        return Value(std::move(items));
    }
    if (name == "wordcount") return Value(static_cast<int64_t>(get_attribute(ev, Value(to_str(v)), "split").as_callable().fn(a).as_array().size()));
    throw TemplateError(cat("unknown filter '", name, "'"));
}

bool apply_test(const std::string& name, const Value& v, CallArgs& a) {
    const Value arg = a.get(0, "other");
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.type() == Value::Type::Float;
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "mapping") return v.is_object() && !v.as_object().is_namespace;
    if (name == "iterable") return v.is_array() || v.is_object() || v.is_string() || v.is_undefined();
    if (name == "sequence") return v.is_array() || v.is_object() || v.is_string() || v.is_undefined();
    if (name == "callable") return v.is_function() || v.is_undefined();  // jinja2's Undefined is callable
    if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") return values_equal(v, arg);
    if (name == "ne" || name == "!=") return !values_equal(v, arg);
    if (name == "lt" || name == "lessthan" || name == "<") return values_less(v, arg);
    if (name == "gt" || name == "greaterthan" || name == ">") return values_less(arg, v);
    if (name == "le" || name == "<=") return !values_less(arg, v);
    if (name == "ge" || name == ">=") return !values_less(v, arg);
    if (name == "odd" || name == "even") return (v.as_int() % 2 != 0) == (name == "odd");
    if (name == "divisibleby") {
        if (arg.as_int() == 0) throw TemplateError("divisibleby 0");
        return v.as_int() % arg.as_int() == 0;
    }
    if (name == "in") {
        if (arg.is_string()) return v.is_string() && arg.as_string().find(v.as_string()) != std::string::npos;
        if (arg.is_object()) return v.is_string() && arg.as_object().find(v.as_string()) != nullptr;
        for (const Value& x : arg.iterate()) {
            if (values_equal(v, x)) return true;
        }
        return false;
    }
    if (name == "lower" || name == "upper") {
        if (!v.is_string()) return false;
        const std::string& s = v.as_string();
        bool cased = false;
        for (const char c : s) {
            const auto u = static_cast<unsigned char>(c);
            if (name == "lower" ? std::isupper(u) : std::islower(u)) return false;
            cased = cased || std::isalpha(u);
        }
        return cased;
    }
    throw TemplateError(cat("unknown test '", name, "'"));
}

}  // namespace strata::jinja
