// SpmEncoder: the bigram agenda of sentencepiece's BPE model. Symbols form a linked list; the
// adjacent pair whose concatenation is the highest-scoring token merges first (ties: leftmost).
#include "engine/tokenizer/spm.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>

#include "engine/tokenizer/utf8.h"

namespace strata {

namespace {


struct SpmSymbol {
    int32_t prev;
    int32_t next;
    uint32_t start;  // byte offset in the escaped text
    uint32_t len;    // 0 once merged into its left neighbour
};

struct Bigram {
    float score;
    int32_t left;
    int32_t right;
    uint32_t len;  // left.len + right.len when pushed; stale if either changed since

    // Priority: higher score first, then the leftmost pair.
    bool operator<(const Bigram& o) const {
        return score < o.score || (score == o.score && left > o.left);
    }
};

}  // namespace

// Buffers reused across the chunks of one encode() call.
struct SpmEncoder::Scratch {
    std::vector<SpmSymbol> symbols;
    std::vector<Bigram> agenda;  // a max-heap by Bigram::operator<
};

SpmEncoder::SpmEncoder(const Vocab& vocab, const TokenIndex& index) : vocab_(vocab), index_(index) {
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        byte_tokens_[b] = index_.find(name);
    }
    for (TokenId id = 0; id < vocab.n_tokens(); ++id) {
        const std::string& text = vocab.tokens[id];
        if (text.size() <= kEscapedSpace.size() || find_piece(text) == kNoToken) continue;
        size_t prev = 0, prev_len = 0;  // the character before `pos`
        for (size_t pos = 0; pos < text.size();) {
            size_t n = utf8_unit_length(text, pos);
            bool space = text.compare(pos, n, kEscapedSpace) == 0;
            bool prev_space = prev_len != 0 && text.compare(prev, prev_len, kEscapedSpace) == 0;
            if (space && prev_len != 0 && !prev_space) {
                joins_space_.push_back(text.substr(prev, prev_len));
            }
            prev = pos;
            prev_len = n;
            pos += n;
        }
    }
    std::sort(joins_space_.begin(), joins_space_.end());
    joins_space_.erase(std::unique(joins_space_.begin(), joins_space_.end()), joins_space_.end());
}

bool SpmEncoder::joins_space(std::string_view ch) const {
    return std::binary_search(joins_space_.begin(), joins_space_.end(), ch, std::less<>());
}

TokenId SpmEncoder::find_piece(std::string_view text) const {
    TokenId id = index_.find(text);
    if (id == kNoToken) return kNoToken;
    TokenType t = vocab_.type(id);
    bool usable = t == TokenType::NORMAL || t == TokenType::USER_DEFINED || t == TokenType::UNUSED;
    return usable ? id : kNoToken;
}

void SpmEncoder::emit_bytes(std::string_view text, std::vector<TokenId>* out) const {
    for (char ch : text) {
        TokenId id = byte_tokens_[static_cast<uint8_t>(ch)];
        // Without byte tokens the unknown token stands in; without that the byte is dropped
        // (a vocabulary that cannot express it leaves no better choice).
        if (id == kNoToken) id = vocab_.unk;
        if (id != kNoToken) out->push_back(id);
    }
}

void SpmEncoder::encode(std::string_view raw, bool space_prefix, std::vector<TokenId>* out) const {
    std::string text;
    text.reserve(raw.size() + raw.size() / 4 + 3);
    if (space_prefix) text += kEscapedSpace;
    for (char ch : raw) {
        if (ch == ' ') {
            text += kEscapedSpace;
        } else {
            text += ch;
        }
    }
    // Cut before each U+2581 that follows a character no token joins to it.
    Scratch scratch;
    size_t chunk = 0, prev = 0, prev_len = 0;
    bool prev_space = false;
    for (size_t pos = 0; pos < text.size();) {
        size_t n = utf8_unit_length(text, pos);
        bool space = text.compare(pos, n, kEscapedSpace) == 0;
        if (space && prev_len != 0 && !prev_space &&
            !joins_space(std::string_view(text).substr(prev, prev_len))) {
            encode_chunk(std::string_view(text).substr(chunk, pos - chunk), &scratch, out);
            chunk = pos;
        }
        prev = pos;
        prev_len = n;
        prev_space = space;
        pos += n;
    }
    if (chunk < text.size()) encode_chunk(std::string_view(text).substr(chunk), &scratch, out);
}

void SpmEncoder::encode_chunk(std::string_view text, Scratch* scratch,
                              std::vector<TokenId>* out) const {
    std::vector<SpmSymbol>& symbols = scratch->symbols;
    std::vector<Bigram>& agenda = scratch->agenda;
    symbols.clear();
    agenda.clear();
    for (size_t pos = 0; pos < text.size();) {
        size_t n = utf8_unit_length(text, pos);
        auto i = static_cast<int32_t>(symbols.size());
        symbols.push_back({i - 1, i + 1, static_cast<uint32_t>(pos), static_cast<uint32_t>(n)});
        pos += n;
    }
    symbols.back().next = -1;

    auto try_add = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const SpmSymbol& l = symbols[left];
        uint32_t len = l.len + symbols[right].len;
        TokenId id = find_piece(text.substr(l.start, len));
        if (id != kNoToken) {
            agenda.push_back({vocab_.score(id), left, right, len});
            std::push_heap(agenda.begin(), agenda.end());
        }
    };
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i)
        try_add(i, i + 1);

    while (!agenda.empty()) {
        std::pop_heap(agenda.begin(), agenda.end());
        Bigram top = agenda.back();
        agenda.pop_back();
        SpmSymbol& l = symbols[top.left];
        SpmSymbol& r = symbols[top.right];
        // Skip pairs that an earlier merge changed.
        if (l.len == 0 || r.len == 0 || l.len + r.len != top.len) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[r.next].prev = top.left;
        try_add(l.prev, top.left);
        try_add(top.left, l.next);
    }

    for (int32_t i = 0; i >= 0; i = symbols[i].next) {
        std::string_view piece = text.substr(symbols[i].start, symbols[i].len);
        TokenId id = find_piece(piece);
        if (id != kNoToken) {
            out->push_back(id);
        } else {
            emit_bytes(piece, out);
        }
    }
}

}  // namespace strata
