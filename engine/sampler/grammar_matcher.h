// GrammarMatcher: which text a grammar (grammar.h) still allows, as a set of parse stacks
// (the positions the parse may be at). Each stack lists, top last, the element to match next
// and the continuations beneath it; an empty stack means the grammar is complete. Feeding a
// code point keeps the stacks whose top character set matches it and expands rule references
// until every top is a character set. Not thread-safe; copyable (a cheap snapshot).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/sampler/grammar.h"

namespace strata {

struct GrammarPosition {
    uint32_t rule, alt, idx;
    bool operator==(const GrammarPosition&) const = default;
    auto operator<=>(const GrammarPosition&) const = default;
};
using GrammarStack = std::vector<GrammarPosition>;

class GrammarMatcher {
public:
    static constexpr size_t kMaxStacks = 4096;  // an ambiguous grammar past this is refused

    explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

    // Feeds one code point. Returns false, leaving the state unchanged, when no stack takes it.
    bool accept(char32_t c);
    // Whether the code points could be fed from the current state (the state is unchanged).
    bool allows(std::u32string_view text) const;
    // Some stack is empty: the text so far is a complete sentence of the grammar.
    bool is_complete() const;
    // Some stack still expects a character.
    bool can_continue() const;
    // Whether the next code point may be c (a fast first check).
    bool allows_next(char32_t c) const;
    void reset();

    const std::vector<GrammarStack>& stacks() const { return stacks_; }
    const Grammar& grammar() const { return *grammar_; }
    // The stacks after feeding c to `stacks` (sorted, without duplicates; empty: rejected).
    std::vector<GrammarStack> advance(const std::vector<GrammarStack>& stacks, char32_t c) const;

private:
    std::shared_ptr<const Grammar> grammar_;
    std::vector<GrammarStack> stacks_;
};

// Throws GrammarError naming a rule that can reach itself without consuming a character.
void check_not_left_recursive(const Grammar& g, std::string_view what);

}  // namespace strata
