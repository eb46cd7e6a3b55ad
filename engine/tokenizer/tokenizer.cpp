// Tokenizer: owns the vocabulary and its tables (index, special-token trie, the SPM or BPE
// encoder) in one immutable shared state, and implements the steps common to both models.
#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <optional>

#include "engine/core/error.h"
#include "engine/gguf/model_file.h"
#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/special_tokens.h"
#include "engine/tokenizer/spm.h"
#include "engine/tokenizer/token_index.h"

namespace strata {

namespace {


// Texts of end-of-turn / end-of-generation tokens across model families (docs/FORMATS.md §4.5).
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",    "<|im_end|>", "<|end|>", "<end_of_turn>",
    "<|endoftext|>", "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>",
};
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>",    "<|im_end|>",
    "<|end|>",       "<end_of_turn>",
    "<|endoftext|>", "</s>",
    "<|eom_id|>",    "<|end_of_text|>",
    "<eos>",         "<EOT>",
    "_<EOT>",        "<|return|>",
    "<|call|>",      "<｜end▁of▁sentence｜>",
};

std::string unescape_spaces(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        if (text.compare(pos, kEscapedSpace.size(), kEscapedSpace) == 0) {
            out += ' ';
            pos += kEscapedSpace.size();
        } else {
            out += text[pos++];
        }
    }
    return out;
}

// The byte of a "<0xXX>" token text, nullopt if it is not one.
std::optional<uint8_t> parse_byte_token(std::string_view text) {
    if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
    int value = 0;
    for (char c : text.substr(3, 2)) {
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
        if (d < 0) return std::nullopt;
        value = value * 16 + d;
    }
    return static_cast<uint8_t>(value);
}

}  // namespace

struct Tokenizer::State {
    Vocab vocab;
    TokenIndex index;
    SpecialTokenMatcher specials;
    std::optional<SpmEncoder> spm;
    std::optional<BpeEncoder> bpe;
    std::vector<std::string> pieces;  // [n_tokens] decoded bytes of each token (special form)
    TokenId eot = kNoToken;
    std::vector<TokenId> eog;  // sorted

    explicit State(Vocab v)
        : vocab(std::move(v)),
          index(vocab.tokens),
          specials(vocab, vocab.model == VocabModel::SPM) {
        if (vocab.model == VocabModel::SPM) {
            spm.emplace(vocab, index);
        } else {
            bpe.emplace(vocab, index);
        }
        make_pieces();
        find_eog();
    }

    void make_pieces() {
        pieces.resize(vocab.tokens.size());
        for (TokenId id = 0; id < vocab.n_tokens(); ++id) {
            const std::string& text = vocab.tokens[id];
            switch (vocab.type(id)) {
                case TokenType::BYTE:
                    if (auto byte = parse_byte_token(text)) {
                        pieces[id] = std::string(1, static_cast<char>(*byte));
                        break;
                    }
                    [[fallthrough]];
                case TokenType::NORMAL:
                case TokenType::UNDEFINED:
                    pieces[id] = vocab.model == VocabModel::SPM ? unescape_spaces(text)
                                                                : byte_level_decode(text);
                    break;
                case TokenType::USER_DEFINED:
                    // Written plainly by converters; SPM ones may still hold escaped spaces.
                    pieces[id] = vocab.model == VocabModel::SPM ? unescape_spaces(text) : text;
                    break;
                case TokenType::CONTROL:
                case TokenType::UNKNOWN:
                case TokenType::UNUSED:
                    pieces[id] = text;
                    break;
            }
        }
    }

    // Only CONTROL tokens count when found by text: Gemma's "</s>" is an HTML tag.
    TokenId find_control(std::string_view text) const {
        TokenId id = index.find(text);
        return id != kNoToken && vocab.type(id) == TokenType::CONTROL ? id : kNoToken;
    }

    void find_eog() {
        eot = vocab.eot;
        for (std::string_view text : kEotTexts) {
            if (eot != kNoToken) break;
            eot = find_control(text);
        }
        for (TokenId id : {vocab.eos, eot, vocab.eom}) {
            if (id != kNoToken) eog.push_back(id);
        }
        for (std::string_view text : kEogTexts) {
            TokenId id = find_control(text);
            if (id != kNoToken) eog.push_back(id);
        }
        // <|end|> ends a message, not the generation, in vocabularies with <|return|>/<|call|>.
        TokenId end = find_control("<|end|>");
        if (end != kNoToken && end != vocab.eos && end != eot &&
            (find_control("<|return|>") != kNoToken || find_control("<|call|>") != kNoToken)) {
            eog.erase(std::remove(eog.begin(), eog.end(), end), eog.end());
        }
        std::sort(eog.begin(), eog.end());
        eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
    }
};

Tokenizer::Tokenizer(Vocab vocab) {
    vocab.validate();
    state_ = std::make_shared<const State>(std::move(vocab));
}

Tokenizer Tokenizer::from_file(const ModelFile& file) {
    // Errors from the tables (merges, pre-tokenizer) get the file's name; Vocab's have it.
    auto named = [&](const Error& e) {
        const std::string what = e.what();
        return what.rfind(file.path(), 0) == 0 ? what : cat(file.path(), ": ", what);
    };
    try {
        return Tokenizer(Vocab::from_file(file));
    } catch (const UnsupportedError& e) {
        throw UnsupportedError(named(e));
    } catch (const FormatError& e) {
        throw FormatError(named(e));
    }
}

const Vocab& Tokenizer::vocab() const {
    return state_->vocab;
}

TokenId Tokenizer::find_token(std::string_view text) const {
    return state_->index.find(text);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
    const State& s = *state_;
    std::vector<TokenId> ids;
    ids.reserve(text.size() / 3 + 2);
    if (add_special && s.vocab.add_bos && s.vocab.bos != kNoToken) ids.push_back(s.vocab.bos);

    bool after_special = true;  // SPM puts its space prefix at the start and after specials
    for (const TextFragment& f : s.specials.split(text, parse_special)) {
        if (f.token != kNoToken) {
            ids.push_back(f.token);
            after_special = true;
            continue;
        }
        if (s.spm) {
            s.spm->encode(f.text, s.vocab.add_space_prefix && after_special, &ids);
        } else {
            s.bpe->encode(f.text, &ids);
        }
        after_special = false;
    }

    if (add_special && s.vocab.add_eos && s.vocab.eos != kNoToken) ids.push_back(s.vocab.eos);
    return ids;
}

std::string Tokenizer::token_to_piece(TokenId id, bool special) const {
    const State& s = *state_;
    if (id < 0 || id >= s.vocab.n_tokens()) {
        throw ArgumentError(cat("token id ", id, " is out of range: the vocabulary has ",
                                s.vocab.n_tokens(), " tokens"));
    }
    TokenType t = s.vocab.type(id);
    bool hidden = t == TokenType::CONTROL || t == TokenType::UNKNOWN || t == TokenType::UNUSED;
    return hidden && !special ? std::string() : s.pieces[id];
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool special) const {
    std::string out;
    for (TokenId id : ids)
        out += token_to_piece(id, special);
    const Vocab& v = state_->vocab;
    if (v.model == VocabModel::SPM && v.add_space_prefix && !out.empty() && out[0] == ' ') {
        out.erase(0, 1);
    }
    return out;
}

bool Tokenizer::is_eog(TokenId id) const {
    return std::binary_search(state_->eog.begin(), state_->eog.end(), id);
}

const std::vector<TokenId>& Tokenizer::eog_ids() const {
    return state_->eog;
}

TokenId Tokenizer::eot() const {
    return state_->eot;
}

}  // namespace strata
