// Quantization tags in file names (see quant_tag.h).
#include "engine/hub/quant_tag.h"

#include <array>
#include <cctype>
#include <vector>

namespace strata {
namespace {

char upper(char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); }

// Q4_K_M, IQ4_XS, TQ1_0, Q8_0, Q4_0_4_4: a Q-family prefix, digits, then "_WORD" parts.
bool is_q_family(std::string_view w) {
    size_t i = 0;
    if (w.starts_with("IQ") || w.starts_with("TQ")) {
        i = 2;
    } else if (w.starts_with("Q")) {
        i = 1;
    } else {
        return false;
    }
    const size_t digits = i;
    while (i < w.size() && std::isdigit(static_cast<unsigned char>(w[i]))) ++i;
    if (i == digits) return false;
    while (i < w.size()) {
        if (w[i] != '_' || i + 1 == w.size()) return false;
        ++i;
        while (i < w.size() && w[i] != '_') {
            if (!std::isalnum(static_cast<unsigned char>(w[i]))) return false;
            ++i;
        }
    }
    return true;
}

bool is_quant_word(std::string_view w) {
    static constexpr std::array<std::string_view, 5> kFloat = {"F16", "F32", "BF16", "MXFP4",
                                                               "MXFP4_MOE"};
    for (std::string_view f : kFloat) {
        if (w == f) return true;
    }
    return is_q_family(w);
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (upper(a[i]) != upper(b[i])) return false;
    }
    return true;
}

bool istarts_with(std::string_view text, std::string_view prefix) {
    return text.size() >= prefix.size() && iequals(text.substr(0, prefix.size()), prefix);
}

bool is_gguf_name(std::string_view file_name) {
    return file_name.size() > 5 && iequals(file_name.substr(file_name.size() - 5), ".gguf");
}

std::string gguf_stem(std::string_view file_name) {
    if (is_gguf_name(file_name)) file_name.remove_suffix(5);
    return std::string(file_name);
}

SplitPart split_part_of(std::string_view file_name) {
    const std::string stem = gguf_stem(file_name);
    // ...-IIIII-of-NNNNN: 5 digits each, as llama.cpp's gguf-split writes them.
    constexpr size_t kTail = 1 + 5 + 4 + 5;
    if (stem.size() < kTail) return {};
    const std::string_view t = std::string_view(stem).substr(stem.size() - kTail);
    if (t[0] != '-' || t.substr(6, 4) != "-of-") return {};
    SplitPart part;
    for (size_t i = 1; i < 6; ++i) {
        if (!std::isdigit(static_cast<unsigned char>(t[i])) || !std::isdigit(static_cast<unsigned char>(t[i + 9]))) return {};
        part.index = part.index * 10 + (t[i] - '0');
        part.count = part.count * 10 + (t[i + 9] - '0');
    }
    if (part.index < 1 || part.index > part.count) return {};
    return part;
}

std::string quant_tag_of(std::string_view file_name) {
    std::string stem = gguf_stem(file_name);
    for (char& c : stem) c = upper(c);
    std::vector<std::string_view> words;
    size_t start = 0;
    for (size_t i = 0; i <= stem.size(); ++i) {
        if (i == stem.size() || stem[i] == '-' || stem[i] == '.') {
            if (i > start) words.emplace_back(stem.data() + start, i - start);
            start = i + 1;
        }
    }
    for (auto it = words.rbegin(); it != words.rend(); ++it) {
        if (is_quant_word(*it)) return std::string(*it);
    }
    return "";
}

}  // namespace strata
