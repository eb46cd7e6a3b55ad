// SpecialTokenMatcher: a byte trie over the candidate token texts, walked once per text
// position; most positions stop at the first byte (no candidate starts with it).
#include "engine/tokenizer/special_tokens.h"

#include <string>

namespace strata {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab, bool spm_spaces) {
    constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581
    for (TokenId id = 0; id < vocab.n_tokens(); ++id) {
        TokenType t = vocab.type(id);
        const std::string& text = vocab.tokens[id];
        if (text.empty()) continue;
        if (t == TokenType::CONTROL || t == TokenType::UNKNOWN) {
            insert(text, id, false);
        } else if (t == TokenType::USER_DEFINED) {
            if (!spm_spaces || text.find(kSpace) == std::string::npos) {
                insert(text, id, true);
                continue;
            }
            std::string unescaped;
            for (size_t pos = 0; pos < text.size();) {
                if (text.compare(pos, kSpace.size(), kSpace) == 0) {
                    unescaped += ' ';
                    pos += kSpace.size();
                } else {
                    unescaped += text[pos++];
                }
            }
            insert(unescaped, id, true);
        }
    }
}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t byte) const {
    if (node == 0) return root_children_[byte];
    for (int32_t c = nodes_[node].first_child; c >= 0; c = nodes_[c].next_sibling) {
        if (nodes_[c].byte == byte) return c;
    }
    return -1;
}

void SpecialTokenMatcher::insert(std::string_view text, TokenId id, bool user_defined) {
    int32_t node = 0;
    for (char ch : text) {
        auto byte = static_cast<uint8_t>(ch);
        int32_t next = child(node, byte);
        if (next < 0) {
            next = static_cast<int32_t>(nodes_.size());
            Node n;
            n.byte = byte;
            if (node == 0) {
                root_children_[byte] = next;
            } else {
                n.next_sibling = nodes_[node].first_child;
                nodes_[node].first_child = next;
            }
            nodes_.push_back(n);
        }
        node = next;
    }
    // Duplicate texts: the later id wins, as in the text -> id index.
    if (nodes_[node].token == kNoToken) ++n_candidates_;
    nodes_[node].token = id;
    nodes_[node].user_defined = user_defined;
}

size_t SpecialTokenMatcher::longest_at(std::string_view text, size_t pos, bool parse_special,
                                       TokenId* id) const {
    size_t best = 0;
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        node = child(node, static_cast<uint8_t>(text[i]));
        if (node < 0) break;
        const Node& n = nodes_[node];
        if (n.token != kNoToken && (parse_special || n.user_defined)) {
            best = i + 1 - pos;
            *id = n.token;
        }
    }
    return best;
}

std::vector<TextFragment> SpecialTokenMatcher::split(std::string_view text,
                                                     bool parse_special) const {
    std::vector<TextFragment> out;
    size_t run_start = 0;
    for (size_t pos = 0; pos < text.size();) {
        TokenId id = kNoToken;
        size_t n = n_candidates_ == 0 ? 0 : longest_at(text, pos, parse_special, &id);
        if (n == 0) {
            ++pos;
            continue;
        }
        if (pos > run_start) out.push_back({kNoToken, text.substr(run_start, pos - run_start)});
        out.push_back({id, text.substr(pos, n)});
        pos += n;
        run_start = pos;
    }
    if (run_start < text.size()) out.push_back({kNoToken, text.substr(run_start)});
    return out;
}

}  // namespace strata
