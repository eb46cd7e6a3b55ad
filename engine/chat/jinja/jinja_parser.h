// Jinja parser: tokens (jinja_lexer.h) to a syntax tree (jinja_ast.h), with jinja2's operator
// precedence (or < and < not < comparisons/in < + - < ~ < * / // % < ** < unary < filters and
// tests < postfix). Statements: if/elif/else, for (targets, if-filter, else), set (name,
// namespace attribute, block), macro, break/continue, generation (rendered as its body).
#pragma once

#include <string_view>

#include "engine/chat/jinja/jinja_ast.h"
#include "engine/chat/jinja/jinja_lexer.h"

namespace strata::jinja {

struct ParseLimits {
    int max_nesting = 200;  // brackets, operators and blocks inside one another
};

// Throws TemplateError naming the line, column and what was expected.
Body parse_template(std::string_view source, const LexOptions& lex_options, const ParseLimits& limits);

}  // namespace strata::jinja
