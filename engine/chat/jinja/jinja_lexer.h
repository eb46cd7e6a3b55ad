// Jinja lexer: splits a template into text and the tokens inside {{ }} and {% %} tags, applying
// whitespace control as jinja2 does: {%- / -%} strip all whitespace beside the tag, trim_blocks
// drops the first newline after a block or comment tag, lstrip_blocks drops the spaces and tabs
// before one at the start of a line, {%+ / +%} switch both off for that side. Comments vanish.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::jinja {

enum class TokenKind { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };

struct Token {
    TokenKind kind;
    std::string text;  // text, name, string value, operator
    int64_t int_value = 0;
    double float_value = 0;
    size_t pos = 0;    // byte offset in the source, for error messages
};

struct LexOptions {
    bool trim_blocks = true;    // as Hugging Face's apply_chat_template renders
    bool lstrip_blocks = true;
};

// Throws TemplateError (with line and column) for an unclosed tag, string or comment, or a
// character that starts no token.
std::vector<Token> lex(std::string_view source, const LexOptions& options);

// "line L, column C" for a byte offset.
std::string source_position(std::string_view source, size_t pos);

}  // namespace strata::jinja
