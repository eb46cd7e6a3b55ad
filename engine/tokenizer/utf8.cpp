// UTF-8 validation and stepping (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
#include "engine/tokenizer/utf8.h"

namespace strata {

namespace {

bool is_continuation(uint8_t b) {
    return (b & 0xC0) == 0x80;
}

// Expected length from the lead byte, 0 for bytes that cannot start a sequence.
size_t lead_length(uint8_t b) {
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) return 3;
    if (b >= 0xF0 && b <= 0xF4) return 4;
    return 0;
}

// Allowed range of the second byte, which carries the overlong / surrogate / range limits.
bool second_byte_ok(uint8_t lead, uint8_t b) {
    switch (lead) {
        case 0xE0:
            return b >= 0xA0 && b <= 0xBF;
        case 0xED:
            return b >= 0x80 && b <= 0x9F;
        case 0xF0:
            return b >= 0x90 && b <= 0xBF;
        case 0xF4:
            return b >= 0x80 && b <= 0x8F;
        default:
            return is_continuation(b);
    }
}

}  // namespace

size_t utf8_char_length(std::string_view text, size_t pos) {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    size_t n = lead_length(s[pos]);
    if (n <= 1) return n;
    if (pos + n > text.size()) return 0;
    if (!second_byte_ok(s[pos], s[pos + 1])) return 0;
    for (size_t i = 2; i < n; ++i) {
        if (!is_continuation(s[pos + i])) return 0;
    }
    return n;
}

bool utf8_is_valid(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        size_t n = utf8_char_length(text, pos);
        if (n == 0) return false;
        pos += n;
    }
    return true;
}

size_t utf8_incomplete_tail(std::string_view text) {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    size_t size = text.size();
    // A sequence is at most 4 bytes, so only the last 3 can be an unfinished one.
    for (size_t back = 1; back <= 3 && back <= size; ++back) {
        size_t start = size - back;
        size_t n = lead_length(s[start]);
        if (n == 0) continue;     // a continuation byte (or junk): look further back
        if (n <= back) return 0;  // the sequence starting here is already complete (or not ours)
        if (back >= 2 && !second_byte_ok(s[start], s[start + 1])) return 0;
        for (size_t i = 2; i < back; ++i) {
            if (!is_continuation(s[start + i])) return 0;
        }
        return back;
    }
    return 0;
}

char32_t utf8_decode(std::string_view text, size_t pos, size_t n) {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data()) + pos;
    switch (n) {
        case 1:
            return s[0];
        case 2:
            return (char32_t(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
        case 3:
            return (char32_t(s[0] & 0x0F) << 12) | (char32_t(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        default:
            return (char32_t(s[0] & 0x07) << 18) | (char32_t(s[1] & 0x3F) << 12) |
                   (char32_t(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    }
}

void utf8_append(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::string utf8_sanitize(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        size_t n = utf8_char_length(text, pos);
        if (n == 0) {
            out += "\xEF\xBF\xBD";
            pos += 1;
        } else {
            out.append(text.substr(pos, n));
            pos += n;
        }
    }
    return out;
}

}  // namespace strata
