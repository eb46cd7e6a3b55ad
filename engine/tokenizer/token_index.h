// Token text -> id lookup shared by the tokenizers: an open-addressing table of (hash, id), so
// the common miss (a pair of symbols that is no token) is rejected without touching a string.
// Where two tokens share a text the later id wins (as in the HF vocab dict and llama.cpp).
// Keeps a pointer to the token texts: they must outlive the index, unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace strata {

class TokenIndex {
public:
    TokenIndex() = default;
    explicit TokenIndex(const std::vector<std::string>& tokens);

    // kNoToken when no token has exactly this text.
    TokenId find(std::string_view text) const;

    static uint32_t hash(std::string_view text) {
        uint32_t h = 2166136261u;  // FNV-1a: tokens are short, so a simple hash is the fast one
        for (char c : text)
            h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
        return h;
    }

private:
    const std::vector<std::string>* tokens_ = nullptr;
    // slot = (uint64_t(hash) << 32) | (id + 1); 0 marks an empty slot. Size a power of two.
    std::vector<uint64_t> slots_;
    uint64_t mask_ = 0;
};

}  // namespace strata
