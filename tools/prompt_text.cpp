// Prompt escapes and token listings (prompt_text.h).
#include "tools/prompt_text.h"

#include <cctype>
#include <cstdio>

#include "engine/tokenizer/tokenizer.h"

namespace strata::cli {
namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

char simple_escape(char c) {
    switch (c) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\'': return '\'';
        case '"': return '"';
        case '\\': return '\\';
        case '?': return '?';
        case 'a': return '\a';
        case 'b': return '\b';
        case 'f': return '\f';
        case 'v': return '\v';
        case '0': return '\0';
        default: return 0;
    }
}

}  // namespace

std::string process_escapes(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\' || i + 1 == text.size()) {
            out += text[i];
            continue;
        }
        const char next = text[i + 1];
        if (next == 'x' && i + 3 < text.size() && hex_value(text[i + 2]) >= 0 && hex_value(text[i + 3]) >= 0) {
            out += static_cast<char>(hex_value(text[i + 2]) * 16 + hex_value(text[i + 3]));
            i += 3;
        } else if (const char c = simple_escape(next); c != 0 || next == '0') {
            out += c;
            ++i;
        } else {
            out += '\\';
        }
    }
    return out;
}

std::string token_lines(const Tokenizer& tokenizer, std::span<const TokenId> ids) {
    std::string out;
    char head[32];
    for (const TokenId id : ids) {
        std::snprintf(head, sizeof head, "%6d -> '", static_cast<int>(id));
        out += head;
        out += tokenizer.token_to_piece(id, /*special=*/true);
        out += "'\n";
    }
    return out;
}

void print_prompt_tokens(const Tokenizer& tokenizer, std::string_view text, std::span<const TokenId> ids) {
    std::fprintf(stderr, "prompt: '%.*s'\nnumber of tokens in prompt = %zu\n%s", static_cast<int>(text.size()),
                 text.data(), ids.size(), token_lines(tokenizer, ids).c_str());
}

}  // namespace strata::cli
