// BpeEncoder: merge table keyed by (left id, right id), and the rank-ordered merge loop over a
// linked list of symbols with a heap, so a word of any length merges in O(n log n).
#include "engine/tokenizer/bpe.h"

#include <queue>

#include "engine/core/error.h"
#include "engine/tokenizer/utf8.h"

namespace strata {

namespace {

std::array<std::string, 256> make_byte_level_chars() {
    std::array<std::string, 256> chars;
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        utf8_append(chars[b], printable ? static_cast<char32_t>(b) : next++);
    }
    return chars;
}

// Code point -> byte for the table above (all code points are below U+0144).
std::array<int16_t, 324> make_byte_level_inverse() {
    std::array<int16_t, 324> inverse;
    inverse.fill(-1);
    const auto& chars = byte_level_chars();
    for (int b = 0; b < 256; ++b) {
        char32_t cp = utf8_decode(chars[b], 0, chars[b].size());
        inverse[cp] = static_cast<int16_t>(b);
    }
    return inverse;
}

struct BpeSymbol {
    int32_t prev;
    int32_t next;
    TokenId id;  // kNoToken once merged into its left neighbour
};

struct Candidate {
    int32_t rank;
    int32_t left;
    TokenId left_id;
    TokenId right_id;

    // Priority: lowest rank first, then the leftmost pair.
    bool operator<(const Candidate& o) const {
        return rank > o.rank || (rank == o.rank && left > o.left);
    }
};

}  // namespace

const std::array<std::string, 256>& byte_level_chars() {
    static const std::array<std::string, 256> chars = make_byte_level_chars();
    return chars;
}

std::string byte_level_decode(std::string_view text) {
    static const std::array<int16_t, 324> inverse = make_byte_level_inverse();
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        size_t n = utf8_char_length(text, pos);
        if (n == 0) {
            out += text[pos++];
            continue;
        }
        char32_t cp = utf8_decode(text, pos, n);
        if (cp < inverse.size() && inverse[cp] >= 0) {
            out += static_cast<char>(inverse[cp]);
        } else {
            out.append(text.substr(pos, n));
        }
        pos += n;
    }
    return out;
}

BpeEncoder::BpeEncoder(const Vocab& vocab, const TokenIndex& index)
    : vocab_(vocab), index_(index), pre_(vocab.pre) {
    const auto& chars = byte_level_chars();
    for (int b = 0; b < 256; ++b)
        byte_ids_[b] = index_.find(chars[b]);

    merges_.reserve(vocab.merges.size());
    for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
        const std::string& m = vocab.merges[rank];
        size_t space = m.find(' ', 1);
        if (space == std::string::npos) {
            throw FormatError(cat("BPE merge ", rank, " '", m,
                                  "' is not two tokens separated "
                                  "by a space"));
        }
        std::string_view left = std::string_view(m).substr(0, space);
        std::string_view right = std::string_view(m).substr(space + 1);
        TokenId l = index_.find(left), r = index_.find(right);
        TokenId result = index_.find(std::string(left) + std::string(right));
        if (l == kNoToken || r == kNoToken || result == kNoToken) {
            std::string missing = l == kNoToken   ? std::string(left)
                                  : r == kNoToken ? std::string(right)
                                                  : std::string(left) + std::string(right);
            throw FormatError(cat("BPE merge ", rank, " '", m, "' needs token '", missing,
                                  "', which is not in the vocabulary"));
        }
        // A repeated pair keeps its first (best) rank.
        merges_.emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), result});
    }
}

void BpeEncoder::encode(std::string_view text, std::vector<TokenId>* out) const {
    for (std::string_view word : pre_.split(text))
        encode_word(word, out);
}

void BpeEncoder::encode_word(std::string_view word, std::vector<TokenId>* out) const {
    const auto& chars = byte_level_chars();
    if (pre_.ignore_merges()) {
        std::string spelled;
        for (char ch : word)
            spelled += chars[static_cast<uint8_t>(ch)];
        TokenId whole = index_.find(spelled);
        if (whole != kNoToken) {
            out->push_back(whole);
            return;
        }
    }

    std::vector<BpeSymbol> symbols;
    symbols.reserve(word.size());
    for (char ch : word) {
        auto i = static_cast<int32_t>(symbols.size());
        // A vocabulary without a byte's token gives that byte the unknown token (or drops it).
        TokenId id = byte_ids_[static_cast<uint8_t>(ch)];
        if (id == kNoToken) id = vocab_.unk;
        if (id == kNoToken) continue;
        symbols.push_back({i - 1, i + 1, id});
    }
    if (symbols.empty()) return;
    symbols.back().next = -1;

    std::priority_queue<Candidate> heap;
    auto try_add = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
        if (it != merges_.end()) {
            heap.push({it->second.rank, left, symbols[left].id, symbols[right].id});
        }
    };
    for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i)
        try_add(i, i + 1);

    while (!heap.empty()) {
        Candidate top = heap.top();
        heap.pop();
        BpeSymbol& l = symbols[top.left];
        // Stale when either side changed since the pair was pushed.
        if (l.id != top.left_id || l.next < 0 || symbols[l.next].id != top.right_id) continue;
        BpeSymbol& r = symbols[l.next];
        l.id = merges_.at(pair_key(top.left_id, top.right_id)).result;
        r.id = kNoToken;
        l.next = r.next;
        if (r.next >= 0) symbols[r.next].prev = top.left;
        try_add(l.prev, top.left);
        try_add(top.left, l.next);
    }
    for (int32_t i = 0; i >= 0; i = symbols[i].next)
        out->push_back(symbols[i].id);
}

}  // namespace strata
