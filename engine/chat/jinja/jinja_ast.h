// The syntax tree of a parsed Jinja template: expressions (Expr) and statements (Node).
// Plain data owned through unique_ptr; the parser builds it, the evaluator only reads it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/chat/jinja/jinja_value.h"

namespace strata::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,   // value
        Name,      // name
        List,      // args: items
        Tuple,     // args: items (evaluates to a list)
        Dict,      // args: key, value, key, value...
        Attr,      // args[0].name
        Index,     // args[0][args[1]]
        Slice,     // args[0][args[1]:args[2]:args[3]] (null parts allowed)
        Call,      // args[0](args[1..], kwargs)
        Filter,    // args[0] | name(args[1..], kwargs)
        Test,      // args[0] is [not] name(args[1..]); negated
        Unary,     // name in {"-", "+", "not"}; args[0]
        Binary,    // args[0] name args[1]; name is an operator, "and", "or", "in", "not in"
        Cond,      // args[0] if args[1] else args[2] (args[2] may be null)
    };
    Kind kind;
    size_t pos = 0;
    std::string name;
    Value value;
    bool negated = false;
    int height = 1;  // 1 + the tallest argument: bounds the evaluator's recursion
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
    enum class Kind {
        Text,      // text
        Output,    // {{ expr }}
        If,        // branches: (condition, body)...; else_body
        For,       // targets in expr [if filter]: body, else_body
        Set,       // targets = expr, or targets[0].attr = expr
        SetBlock,  // {% set target %}body{% endset %}
        Macro,     // name(params) body
        Break,
        Continue,
    };
    Kind kind;
    size_t pos = 0;
    std::string text;                  // Text; Macro name
    std::string attr;                  // Set on a namespace attribute
    ExprPtr expr;
    ExprPtr filter;                    // For ... if filter
    std::vector<std::string> targets;  // For / Set names
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body body;
    Body else_body;
    std::vector<std::pair<std::string, ExprPtr>> params;  // Macro parameters and defaults
};

}  // namespace strata::jinja
