// Detokenizer: appends each piece to the held bytes and releases the longest prefix that does
// not end inside a character.
#include "engine/tokenizer/detokenizer.h"

#include "engine/tokenizer/utf8.h"

namespace strata {

Detokenizer::Detokenizer(const Tokenizer& tokenizer, bool special)
    : tokenizer_(tokenizer), special_(special) {
    const Vocab& v = tokenizer.vocab();
    strip_space_ = v.model == VocabModel::SPM && v.add_space_prefix;
}

std::string Detokenizer::push(TokenId id) {
    pending_ += tokenizer_.token_to_piece(id, special_);
    if (at_start_ && !pending_.empty()) {
        if (strip_space_ && pending_[0] == ' ') pending_.erase(0, 1);
        at_start_ = false;
    }
    size_t keep = utf8_incomplete_tail(pending_);
    std::string out = utf8_sanitize(std::string_view(pending_).substr(0, pending_.size() - keep));
    pending_.erase(0, pending_.size() - keep);
    return out;
}

std::string Detokenizer::flush() {
    std::string out = utf8_sanitize(pending_);
    pending_.clear();
    at_start_ = true;
    return out;
}

}  // namespace strata
