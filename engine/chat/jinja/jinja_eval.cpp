// The Jinja evaluator (jinja_eval.h) and Template (jinja_template.h).
#include "engine/chat/jinja/jinja_eval.h"

#include <cmath>

namespace strata::jinja {
namespace {

constexpr std::string_view kErrorPrefix = "template error at ";

bool has_position(const TemplateError& e) { return std::string_view(e.what()).starts_with(kErrorPrefix); }

Value arith(const std::string& op, const Value& a, const Value& b);

}  // namespace

namespace {

// jinja2 reads "\r\n" and "\r" as "\n" and drops one trailing newline (keep_trailing_newline=False).
std::string normalize_newlines(std::string s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\r') {
            out += '\n';
            if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
        } else {
            out += s[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

}  // namespace

Template::Template(std::string source, const LexOptions& lex, const ParseLimits& parse)
    : source_(normalize_newlines(std::move(source))), body_(parse_template(source_, lex, parse)) {}

std::string Template::render(const Object& context, const RenderLimits& limits) const {
    Evaluator ev(source_, limits);
    return ev.run(body_, context);
}

std::string Evaluator::run(const Body& body, const Object& context) {
    scopes_.push_back(Scope{context, false});
    scopes_.push_back(Scope{});
    outputs_.emplace_back();
    exec(body);
    return std::move(outputs_.back());
}

void Evaluator::fail(const std::string& what, size_t pos) const {
    throw TemplateError(cat(kErrorPrefix, source_position(source_, pos), ": ", what));
}

void Evaluator::check_size(size_t size) const {
    if (size > limits_.max_output_bytes) {
        throw TemplateError(cat("a value or the output would pass the limit of ", limits_.max_output_bytes, " bytes"));
    }
}

void Evaluator::step() {
    if (++steps_ > limits_.max_steps) throw TemplateError(cat("the template ran more than ", limits_.max_steps, " steps"));
}

void Evaluator::emit(std::string_view text) {
    std::string& out = outputs_.back();
    check_size(out.size() + text.size());
    out += text;
}

Evaluator::Flow Evaluator::exec(const Body& body) {
    for (const NodePtr& n : body) {
        const Flow f = exec_node(*n);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Evaluator::Flow Evaluator::exec_node(const Node& n) {
    step();
    try {
        switch (n.kind) {
            case Node::Kind::Text: emit(n.text); return Flow::Normal;
            case Node::Kind::Output: emit(to_str(eval(*n.expr))); return Flow::Normal;
            case Node::Kind::If:
                for (const auto& [cond, body] : n.branches) {
                    if (eval(*cond).truthy()) return exec(body);
                }
                return exec(n.else_body);
            case Node::Kind::For: return exec_for(n);
            case Node::Kind::Set:
            case Node::Kind::SetBlock: exec_set(n); return Flow::Normal;
            case Node::Kind::Macro: define_macro(n); return Flow::Normal;
            case Node::Kind::Break: return Flow::Break;
            case Node::Kind::Continue: return Flow::Continue;
        }
    } catch (const TemplateError& e) {
        if (has_position(e)) throw;
        fail(e.what(), n.pos);
    }
    return Flow::Normal;
}

Value Evaluator::lookup(const std::string& name) const {
    for (size_t i = scopes_.size(); i-- > 0;) {
        if (const Value* v = scopes_[i].vars.find(name)) return *v;
        if (scopes_[i].barrier && i > 2) i = 2;  // skip to the template's top-level scope
    }
    return Value();
}

Evaluator::Flow Evaluator::exec_for(const Node& n) {
    const Value seq = eval(*n.expr);
    Array items;
    if (seq.is_object() || seq.is_array() || seq.is_string() || seq.is_undefined()) {
        items = seq.iterate();
    } else {
        fail(cat("'", seq.type_name(), "' object is not iterable"), n.expr->pos);
    }
    auto bind = [&](const Value& item) {
        if (n.targets.size() == 1) {
            assign(n.targets[0], item);
            return;
        }
        const Array parts = item.iterate();
        if (parts.size() != n.targets.size()) {
            fail(cat("cannot unpack ", parts.size(), " values into ", n.targets.size(), " loop variables"), n.pos);
        }
        for (size_t i = 0; i < parts.size(); ++i) assign(n.targets[i], parts[i]);
    };
    if (n.filter) {
        Array kept;
        for (const Value& item : items) {
            step();
            scopes_.push_back(Scope{});
            bind(item);
            const bool keep = eval(*n.filter).truthy();
            scopes_.pop_back();
            if (keep) kept.push_back(item);
        }
        items = std::move(kept);
    }
    if (items.empty()) return exec(n.else_body);
    const auto length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
        step();
        Object loop;
        loop.items = {{"index0", Value(i)}, {"index", Value(i + 1)}, {"revindex", Value(length - i)},
                      {"revindex0", Value(length - i - 1)}, {"first", Value(i == 0)},
                      {"last", Value(i == length - 1)}, {"length", Value(length)}, {"depth", Value(1)},
                      {"depth0", Value(0)},
                      {"previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value()},
                      {"nextitem", i + 1 < length ? items[static_cast<size_t>(i + 1)] : Value()}};
        loop.items.emplace_back("cycle", Value::function("loop.cycle", [i](CallArgs& a) {
            if (a.args.empty()) throw TemplateError("loop.cycle() needs at least one argument");
            return a.args[static_cast<size_t>(i) % a.args.size()];
        }));
        scopes_.push_back(Scope{});
        assign("loop", Value(std::move(loop)));
        bind(items[static_cast<size_t>(i)]);
        const Flow f = exec(n.body);
        scopes_.pop_back();
        if (f == Flow::Break) break;
    }
    return Flow::Normal;
}

void Evaluator::exec_set(const Node& n) {
    if (n.kind == Node::Kind::SetBlock) {
        outputs_.emplace_back();
        exec(n.body);
        std::string text = std::move(outputs_.back());
        outputs_.pop_back();
        assign(n.targets[0], Value(std::move(text)));
        return;
    }
    Value v = eval(*n.expr);
    if (!n.attr.empty()) {
        const Value target = lookup(n.targets[0]);
        if (!target.is_object() || !target.as_object().is_namespace) {
            fail(cat("cannot set attribute '", n.attr, "' on '", n.targets[0], "' (", target.type_name(),
                     "): only a namespace() takes attributes"), n.pos);
        }
        target.object_for_update().set(n.attr, std::move(v));
        return;
    }
    if (n.targets.size() == 1) {
        assign(n.targets[0], std::move(v));
        return;
    }
    const Array parts = v.iterate();
    if (parts.size() != n.targets.size()) {
        fail(cat("cannot unpack ", parts.size(), " values into ", n.targets.size(), " names"), n.pos);
    }
    for (size_t i = 0; i < parts.size(); ++i) assign(n.targets[i], parts[i]);
}

void Evaluator::define_macro(const Node& n) {
    const Node* node = &n;
    assign(n.text, Value::function(n.text, [this, node](CallArgs& args) { return call_macro(*node, args); }));
}

Value Evaluator::call_macro(const Node& n, CallArgs& args) {
    if (call_depth_ >= limits_.max_call_depth) {
        throw TemplateError(cat("macro '", n.text, "' called more than ", limits_.max_call_depth, " deep"));
    }
    if (args.args.size() > n.params.size()) {
        throw TemplateError(cat("macro '", n.text, "' takes ", n.params.size(), " arguments, got ", args.args.size()));
    }
    Scope scope{{}, true};
    for (size_t i = 0; i < n.params.size(); ++i) {
        const auto& [name, def] = n.params[i];
        Value v = args.get(i, name);
        if (v.is_undefined() && def) v = eval(*def);
        scope.vars.set(name, std::move(v));
    }
    ++call_depth_;
    scopes_.push_back(std::move(scope));
    outputs_.emplace_back();
    struct Restore {
        Evaluator& ev;
        ~Restore() {
            ev.scopes_.pop_back();
            ev.outputs_.pop_back();
            --ev.call_depth_;
        }
    };
    std::string text;
    {
        Restore restore{*this};
        exec(n.body);
        text = std::move(outputs_.back());
    }
    return Value(std::move(text));
}

Value Evaluator::eval(const Expr& e) {
    step();
    switch (e.kind) {
        case Expr::Kind::Literal: return e.value;
        case Expr::Kind::Name: {
            Value v = lookup(e.name);
            return v.is_undefined() ? builtin_global(*this, e.name) : v;
        }
        case Expr::Kind::List:
        case Expr::Kind::Tuple: {
            Array a;
            for (const ExprPtr& x : e.args) a.push_back(eval(*x));
            return e.kind == Expr::Kind::Tuple ? Value::tuple(std::move(a)) : Value(std::move(a));
        }
        case Expr::Kind::Dict: {
            Object o;
            for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                const Value k = eval(*e.args[i]);
                if (!k.is_string()) fail(cat("dict keys must be strings here, got ", k.type_name()), e.args[i]->pos);
                o.set(k.as_string(), eval(*e.args[i + 1]));
            }
            return Value(std::move(o));
        }
        case Expr::Kind::Attr: return get_attribute(*this, eval(*e.args[0]), e.name);
        case Expr::Kind::Index: return get_item(*this, eval(*e.args[0]), eval(*e.args[1]));
        case Expr::Kind::Slice: {
            auto part = [&](size_t i) { return e.args[i] ? eval(*e.args[i]) : Value(); };
            return slice_value(eval(*e.args[0]), part(1), part(2), part(3));
        }
        case Expr::Kind::Call: return eval_call(e);
        case Expr::Kind::Filter: {
            const Value subject = eval(*e.args[0]);
            CallArgs args = eval_args(e, 1);
            return apply_filter(*this, e.name, subject, args);
        }
        case Expr::Kind::Test: {
            const Value subject = eval(*e.args[0]);
            CallArgs args = eval_args(e, 1);
            return Value(apply_test(e.name, subject, args) != e.negated);
        }
        case Expr::Kind::Unary: {
            const Value v = eval(*e.args[0]);
            if (e.name == "not") return Value(!v.truthy());
            if (!v.is_number()) fail(cat("bad operand type for unary ", e.name, ": '", v.type_name(), "'"), e.pos);
            if (e.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
            return v.type() == Value::Type::Float ? Value(-v.as_double()) : Value(-v.as_int());
        }
        case Expr::Kind::Binary: return eval_binary(e);
        case Expr::Kind::Cond:
            if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
            return e.args[2] ? eval(*e.args[2]) : Value();
    }
    return Value();
}

CallArgs Evaluator::eval_args(const Expr& e, size_t first) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i) args.args.push_back(eval(*e.args[i]));
    for (const auto& [k, x] : e.kwargs) args.kwargs.emplace_back(k, eval(*x));
    return args;
}

Value Evaluator::eval_call(const Expr& e) {
    const Value callee = eval(*e.args[0]);
    if (!callee.is_function()) {
        std::string what = e.args[0]->kind == Expr::Kind::Name ? e.args[0]->name
                           : e.args[0]->kind == Expr::Kind::Attr ? e.args[0]->name : "value";
        fail(cat("'", what, "' is ", callee.is_undefined() ? "undefined" : "not callable (" + callee.type_name() + ")"),
             e.pos);
    }
    CallArgs args = eval_args(e, 1);
    try {
        return callee.as_callable().fn(args);
    } catch (const TemplateError& err) {
        if (has_position(err)) throw;
        fail(err.what(), e.pos);
    }
}

Value Evaluator::eval_binary(const Expr& e) {
    const std::string& op = e.name;
    const Value a = eval(*e.args[0]);
    if (op == "and") return a.truthy() ? eval(*e.args[1]) : a;
    if (op == "or") return a.truthy() ? a : eval(*e.args[1]);
    const Value b = eval(*e.args[1]);
    try {
        if (op == "==") return Value(values_equal(a, b));
        if (op == "!=") return Value(!values_equal(a, b));
        if (op == "<") return Value(values_less(a, b));
        if (op == ">") return Value(values_less(b, a));
        if (op == "<=") return Value(!values_less(b, a));
        if (op == ">=") return Value(!values_less(a, b));
        if (op == "in" || op == "not in") {
            bool found = false;
            if (b.is_string()) {
                if (!a.is_string()) fail(cat("'in <string>' requires a string on the left, got ", a.type_name()), e.pos);
                found = b.as_string().find(a.as_string()) != std::string::npos;
            } else if (b.is_object()) {
                found = a.is_string() && b.as_object().find(a.as_string()) != nullptr;
            } else {
                for (const Value& x : b.iterate()) found = found || values_equal(a, x);
            }
            return Value(found != (op == "not in"));
        }
        if (op == "~") {
            std::string s = to_str(a) + to_str(b);
            check_size(s.size());
            return Value(std::move(s));
        }
        if (a.is_undefined() || b.is_undefined()) fail(cat("undefined value used with '", op, "'"), e.pos);
        if (op == "+" && a.is_string() && b.is_string()) {
            check_size(a.as_string().size() + b.as_string().size());
            return Value(a.as_string() + b.as_string());
        }
        if (op == "+" && a.is_array() && b.is_array()) {
            check_size(a.as_array().size() + b.as_array().size());
            Array r = a.as_array();
            r.insert(r.end(), b.as_array().begin(), b.as_array().end());
            return Value(std::move(r));
        }
        if (op == "*" && (a.is_string() || b.is_string()) && (a.is_int() || b.is_int())) {
            const std::string& s = a.is_string() ? a.as_string() : b.as_string();
            const int64_t n = a.is_int() ? a.as_int() : b.as_int();
            if (n > 0) check_size(s.size() * static_cast<size_t>(n));
            std::string r;
            for (int64_t i = 0; i < n; ++i) r += s;
            return Value(std::move(r));
        }
        return arith(op, a, b);
    } catch (const TemplateError& err) {
        if (has_position(err)) throw;
        fail(err.what(), e.pos);
    }
}

namespace {

int64_t checked(long double r) {
    if (r > 9.2e18L || r < -9.2e18L) throw TemplateError("integer overflow");
    return static_cast<int64_t>(r);
}

Value arith(const std::string& op, const Value& a, const Value& b) {
    if (!a.is_number() || !b.is_number()) {
        throw TemplateError(cat("unsupported operand types for ", op, ": '", a.type_name(), "' and '", b.type_name(), "'"));
    }
    const bool ints = a.type() != Value::Type::Float && b.type() != Value::Type::Float;
    if (ints && op != "/") {
        const int64_t x = a.as_int();
        const int64_t y = b.as_int();
        if ((op == "//" || op == "%") && y == 0) throw TemplateError("integer division or modulo by zero");
        if (op == "+") return Value(checked(static_cast<long double>(x) + y));
        if (op == "-") return Value(checked(static_cast<long double>(x) - y));
        if (op == "*") return Value(checked(static_cast<long double>(x) * y));
        if (op == "//") return Value(checked(std::floor(static_cast<long double>(x) / y)));
        if (op == "%") return Value(((x % y) + y) % y);
        if (op == "**" && y >= 0) return Value(checked(std::pow(static_cast<long double>(x), y)));
    }
    const double x = a.as_double();
    const double y = b.as_double();
    if ((op == "/" || op == "//" || op == "%") && y == 0) throw TemplateError("float division by zero");
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/") return Value(x / y);
    if (op == "//") return Value(std::floor(x / y));
    if (op == "%") return Value(x - y * std::floor(x / y));
    if (op == "**") return Value(std::pow(x, y));
    throw TemplateError(cat("unknown operator '", op, "'"));
}

}  // namespace
}  // namespace strata::jinja
