// GBNF grammars (llama.cpp's grammar format): rules `name ::= alternatives` of literals "...",
// character classes [a-z] / [^...], `.`, rule references, groups ( ), and the quantifiers
// * + ? {m} {m,} {m,n}; `#` comments. parse_gbnf() compiles the text into plain rules whose
// alternatives are sequences of character sets and rule references (quantifiers and groups
// become generated rules). The start rule is `root`. Immutable once built.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/error.h"

namespace strata {

// A grammar text that does not parse, names an undefined rule, lacks `root`, or is
// left-recursive. The message names the line and column, or the rule.
class GrammarError : public ArgumentError {
public:
    using ArgumentError::ArgumentError;
};

struct GrammarElement {
    enum class Kind : uint8_t { End, Chars, RuleRef };
    Kind kind = Kind::End;
    bool negated = false;                                  // Chars: [^...]
    uint32_t rule = 0;                                     // RuleRef
    std::vector<std::pair<char32_t, char32_t>> ranges;     // Chars: inclusive code point ranges

    bool matches(char32_t c) const;
};

// One alternative: elements ending with an End element.
using GrammarSequence = std::vector<GrammarElement>;

struct Grammar {
    std::vector<std::vector<GrammarSequence>> rules;  // rule id -> alternatives
    std::vector<std::string> names;                   // rule id -> name (generated: parent-N)
    uint32_t root = 0;

    const GrammarElement& at(uint32_t rule, uint32_t alt, uint32_t idx) const { return rules[rule][alt][idx]; }
};

// `what` names the source in messages ("--grammar", a file path).
Grammar parse_gbnf(std::string_view text, std::string_view what = "grammar");

}  // namespace strata
