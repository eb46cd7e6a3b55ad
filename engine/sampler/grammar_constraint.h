// GrammarConstraint: the sampler stage that keeps generation inside a grammar. mask() sets the
// logit of every token whose text cannot continue the grammar to -inf; an end-of-generation
// token is allowed only where the grammar is complete, other control tokens never. accept()
// advances past the chosen token. A token may end inside a UTF-8 character: its complete
// characters are checked and the rest waits for the next token. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/sampler/grammar_matcher.h"

namespace strata {

class Tokenizer;

struct GrammarVocab {
    enum class Kind : uint8_t { Text, EndOfGeneration, Control };
    std::vector<std::string> text;  // by token id: the bytes the token adds to the output
    std::vector<Kind> kind;

    // Filled by index(): each text token's complete code points (and whether bytes of an
    // unfinished character follow), and the text tokens sorted by code points with the length
    // of the prefix each shares with the one before, so mask() walks them as a trie.
    std::vector<std::u32string> code_points;
    std::vector<uint8_t> partial_tail;  // bytes of an unfinished character at the end
    std::vector<int32_t> sorted;
    std::vector<uint32_t> shared_prefix;

    void index();
    static std::shared_ptr<const GrammarVocab> from_tokenizer(const Tokenizer& tokenizer);
};

class GrammarConstraint {
public:
    GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocab> vocab);

    // logits: [n_vocab] by token id (ids past the vocabulary table are banned).
    void mask(std::span<float> logits) const;
    // Advances past `token`; throws ArgumentError when the grammar does not allow it.
    void accept(int32_t token);
    bool is_complete() const { return matcher_.is_complete() && pending_.empty(); }
    void reset();

private:
    bool allows_text(const std::string& bytes) const;
    std::vector<bool> allowed_tokens() const;  // by token id, Text tokens only (no pending bytes)

    std::shared_ptr<const GrammarVocab> vocab_;
    GrammarMatcher matcher_;
    std::string pending_;  // bytes of an unfinished UTF-8 character from earlier tokens
    // allowed_tokens() by parse state: states recur (every character inside a JSON string).
    mutable std::map<std::vector<GrammarStack>, std::vector<bool>> cache_;
};

}  // namespace strata
