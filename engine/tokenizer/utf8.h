// UTF-8 helpers for the tokenizer: splitting text into characters without ever failing on
// invalid input, and finding where a byte stream stops being complete UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

// Length of the valid UTF-8 sequence starting at text[pos] (1-4), or 0 when the bytes there are
// not one: a stray continuation byte, an overlong form, a surrogate, a value past U+10FFFF, or a
// sequence cut short by the end of `text`. Requires pos < text.size().
size_t utf8_char_length(std::string_view text, size_t pos);

// Length of the character or, for invalid input, the single byte at text[pos]: the unit the
// tokenizers step by, so that every byte of any input belongs to exactly one unit.
inline size_t utf8_unit_length(std::string_view text, size_t pos) {
    size_t n = utf8_char_length(text, pos);
    return n == 0 ? 1 : n;
}

bool utf8_is_valid(std::string_view text);

// Number of bytes at the end of `text` that are a proper prefix of a valid sequence (0-3): what
// a streaming decoder must hold back until the next bytes arrive.
size_t utf8_incomplete_tail(std::string_view text);

// Code point of the valid sequence of `n` bytes at text[pos] (n from utf8_char_length).
char32_t utf8_decode(std::string_view text, size_t pos, size_t n);

void utf8_append(std::string& out, char32_t cp);

// `text` with every invalid byte replaced by U+FFFD: always valid UTF-8.
std::string utf8_sanitize(std::string_view text);

}  // namespace strata
