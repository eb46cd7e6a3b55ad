// Splits text at special tokens before the model tokenizer sees it (docs/FORMATS.md §4.2).
// Candidates are CONTROL, UNKNOWN and USER_DEFINED tokens; with parse_special = false only
// USER_DEFINED ones match. Matching is leftmost-longest, as Hugging Face's added-token splitter
// and sentencepiece's user-defined symbols do: scanning left to right, the longest candidate
// starting at the earliest position wins.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace strata {

// A piece of the input: either one special token or a run of ordinary text.
struct TextFragment {
    TokenId token = kNoToken;  // kNoToken for text
    std::string_view text;     // the matched token text, or the raw text run (a view of input)
};

class SpecialTokenMatcher {
public:
    SpecialTokenMatcher() = default;
    // With `spm_spaces`, U+2581 in USER_DEFINED texts matches a space: sentencepiece matches
    // user-defined pieces in text whose spaces are already escaped (GGUF converters write some
    // of them with real spaces, some not).
    SpecialTokenMatcher(const Vocab& vocab, bool spm_spaces);

    // Fragments of `text` in order; their texts concatenate back to `text`. Views into `text`.
    std::vector<TextFragment> split(std::string_view text, bool parse_special) const;

    size_t n_candidates() const { return n_candidates_; }

private:
    struct Node {
        TokenId token = kNoToken;  // a candidate ends here
        bool user_defined = false;
        int32_t first_child = -1;  // children form a singly linked list
        int32_t next_sibling = -1;
        uint8_t byte = 0;
    };
    void insert(std::string_view text, TokenId id, bool user_defined);
    int32_t child(int32_t node, uint8_t byte) const;
    // Longest allowed candidate starting at text[pos]: its length, 0 if none.
    size_t longest_at(std::string_view text, size_t pos, bool parse_special, TokenId* id) const;

    std::vector<Node> nodes_{1};  // nodes_[0] is the root; its children are in root_children_
    std::array<int32_t, 256> root_children_ = filled(-1);  // the hot lookup, one per text byte
    size_t n_candidates_ = 0;

    static std::array<int32_t, 256> filled(int32_t v) {
        std::array<int32_t, 256> a;
        a.fill(v);
        return a;
    }
};

}  // namespace strata
