// The tree-walking evaluator behind Template::render (internal to engine/chat/jinja). Holds the
// scopes, the output and the limit counters of one render; filters, tests and methods
// (jinja_filters.cpp, jinja_methods.cpp) call back into it for macros and size checks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/jinja/jinja_template.h"

namespace strata::jinja {

class Evaluator {
public:
    Evaluator(std::string_view source, const RenderLimits& limits) : source_(source), limits_(limits) {}

    std::string run(const Body& body, const Object& context);
    Value eval(const Expr& e);

    // Throws when a string or list of `size` bytes/items would pass the output limit.
    void check_size(size_t size) const;
    void step();
    const RenderLimits& limits() const { return limits_; }

private:
    enum class Flow { Normal, Break, Continue };
    struct Scope {
        Object vars;
        bool barrier = false;  // a macro's own scope: names below it (but the globals) are hidden
    };

    Flow exec(const Body& body);
    Flow exec_node(const Node& n);
    Flow exec_for(const Node& n);
    void exec_set(const Node& n);
    void define_macro(const Node& n);
    Value call_macro(const Node& n, CallArgs& args);
    void emit(std::string_view text);

    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value v) { scopes_.back().vars.set(name, std::move(v)); }
    Value eval_binary(const Expr& e);
    Value eval_call(const Expr& e);
    CallArgs eval_args(const Expr& e, size_t first);
    [[noreturn]] void fail(const std::string& what, size_t pos) const;

    std::string_view source_;
    RenderLimits limits_;
    std::vector<Scope> scopes_;
    std::vector<std::string> outputs_;  // a stack: macros render into their own string
    uint64_t steps_ = 0;
    int call_depth_ = 0;
};

// Filters and tests by name (jinja_filters.cpp); unknown names throw TemplateError.
Value apply_filter(Evaluator& ev, const std::string& name, const Value& subject, CallArgs& args);
bool apply_test(const std::string& name, const Value& subject, CallArgs& args);
// obj.name: a dict's item or method, a string's method (jinja_methods.cpp).
Value get_attribute(Evaluator& ev, const Value& obj, const std::string& name);
// obj[key] with Python's rules (negative indices; missing: undefined).
Value get_item(Evaluator& ev, const Value& obj, const Value& key);
// obj[start:stop:step] on a list or string (null parts: undefined values).
Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);
// The built-in globals: range, namespace, dict, raise_exception, strftime_now.
Value builtin_global(Evaluator& ev, const std::string& name);

}  // namespace strata::jinja
