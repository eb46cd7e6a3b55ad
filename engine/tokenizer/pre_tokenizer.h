// Splits text into the words a byte-level BPE merges within, by the regular expression its
// tokenizer.ggml.pre names (docs/FORMATS.md §4.4), through PCRE2 with Unicode properties.
// Matches and the text between them both become words ("isolated" splitting, as in Hugging
// Face's Split pre-tokenizer), so the words always concatenate back to the input.
//
// Immutable after construction; split() may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class PreTokenizer {
public:
    // Throws UnsupportedError for a name it does not know, listing the known ones.
    explicit PreTokenizer(const std::string& pre);
    ~PreTokenizer();
    PreTokenizer(PreTokenizer&&) noexcept;
    PreTokenizer& operator=(PreTokenizer&&) noexcept;

    // Invalid UTF-8 never reaches the regex: each invalid byte becomes a word of its own and the
    // valid runs between are split as usual.
    std::vector<std::string_view> split(std::string_view text) const;

    const std::string& name() const { return name_; }
    const std::string& pattern() const { return pattern_; }
    // llama3-style vocabularies emit a word that is itself a token without merging.
    bool ignore_merges() const { return ignore_merges_; }

    static std::vector<std::string> known_names();

private:
    void split_valid(std::string_view text, std::vector<std::string_view>* out) const;

    struct Regex;
    std::string name_;
    std::string pattern_;
    bool ignore_merges_ = false;
    std::unique_ptr<Regex> regex_;
};

}  // namespace strata
