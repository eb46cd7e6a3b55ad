// Prompt text as llama.cpp's tools treat it: escapes in -p processed (\n, \t, \\, \xHH ...),
// and the tokens of a prompt listed as "id -> 'piece'" (run --verbose-prompt, strata tokenize).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "engine/tokenizer/vocab.h"

namespace strata {
class Tokenizer;
}

namespace strata::cli {

// \n \r \t \' \" \\ \? \a \b \f \v \0 and \xHH become their characters; any other backslash
// stays as typed.
std::string process_escapes(std::string_view text);

// One line per token: "  9259 -> 'Hello'" (control tokens spelled out).
std::string token_lines(const Tokenizer& tokenizer, std::span<const TokenId> ids);

// run --verbose-prompt: the prompt, its length in tokens and token_lines(), on stderr.
void print_prompt_tokens(const Tokenizer& tokenizer, std::string_view text, std::span<const TokenId> ids);

}  // namespace strata::cli
