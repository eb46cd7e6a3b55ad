// Parse stacks of a grammar (grammar_matcher.h).
#include "engine/sampler/grammar_matcher.h"

#include <algorithm>

namespace strata {
namespace {

// Pops finished sequences, then expands a rule reference on top into one stack per
// alternative, until every top is a character set (or the stack is empty: complete).
// `depth` counts expansions without consuming a character: past the number of rules, a
// rule reached itself, which is left recursion.
void expand(const Grammar& g, GrammarStack s, std::vector<GrammarStack>& out, size_t depth) {
    while (!s.empty()) {
        const GrammarPosition& top = s.back();
        if (g.at(top.rule, top.alt, top.idx).kind != GrammarElement::Kind::End) break;
        s.pop_back();
    }
    if (s.empty() || g.at(s.back().rule, s.back().alt, s.back().idx).kind == GrammarElement::Kind::Chars) {
        out.push_back(std::move(s));
        return;
    }
    if (depth > g.rules.size()) {
        throw GrammarError(cat("the grammar is left-recursive at rule '", g.names[g.at(s.back().rule, s.back().alt, s.back().idx).rule],
                               "' (it can reach itself without consuming a character)"));
    }
    const GrammarPosition ref = s.back();
    const uint32_t rule = g.at(ref.rule, ref.alt, ref.idx).rule;
    s.pop_back();
    if (g.at(ref.rule, ref.alt, ref.idx + 1).kind != GrammarElement::Kind::End) {
        s.push_back(GrammarPosition{ref.rule, ref.alt, ref.idx + 1});
    }
    for (uint32_t a = 0; a < g.rules[rule].size(); ++a) {
        GrammarStack next = s;
        next.push_back(GrammarPosition{rule, a, 0});
        expand(g, std::move(next), out, depth + 1);
        if (out.size() > GrammarMatcher::kMaxStacks) {
            throw GrammarError(cat("the grammar is too ambiguous: more than ", GrammarMatcher::kMaxStacks, " parse stacks"));
        }
    }
}

void dedupe(std::vector<GrammarStack>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

std::vector<GrammarStack> initial_stacks(const Grammar& g) {
    std::vector<GrammarStack> out;
    for (uint32_t a = 0; a < g.rules[g.root].size(); ++a) expand(g, GrammarStack{{g.root, a, 0}}, out, 0);
    dedupe(out);
    return out;
}

}  // namespace

void check_not_left_recursive(const Grammar& g, std::string_view what) {
    try {
        for (uint32_t r = 0; r < g.rules.size(); ++r) {
            std::vector<GrammarStack> out;
            for (uint32_t a = 0; a < g.rules[r].size(); ++a) expand(g, GrammarStack{{r, a, 0}}, out, 0);
        }
    } catch (const GrammarError& e) {
        throw GrammarError(cat(what, ": ", e.what()));
    }
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), stacks_(initial_stacks(*grammar_)) {}

void GrammarMatcher::reset() { stacks_ = initial_stacks(*grammar_); }

std::vector<GrammarStack> GrammarMatcher::advance(const std::vector<GrammarStack>& stacks, char32_t c) const {
    const Grammar& g = *grammar_;
    std::vector<GrammarStack> out;
    for (const GrammarStack& s : stacks) {
        if (s.empty()) continue;
        const GrammarPosition& top = s.back();
        if (!g.at(top.rule, top.alt, top.idx).matches(c)) continue;
        GrammarStack next = s;
        next.back().idx++;
        expand(g, std::move(next), out, 0);
    }
    dedupe(out);
    return out;
}

bool GrammarMatcher::accept(char32_t c) {
    std::vector<GrammarStack> next = advance(stacks_, c);
    if (next.empty()) return false;
    stacks_ = std::move(next);
    return true;
}

bool GrammarMatcher::allows_next(char32_t c) const {
    for (const GrammarStack& s : stacks_) {
        if (!s.empty() && grammar_->at(s.back().rule, s.back().alt, s.back().idx).matches(c)) return true;
    }
    return false;
}

bool GrammarMatcher::allows(std::u32string_view text) const {
    if (text.empty()) return true;
    if (!allows_next(text[0])) return false;
    std::vector<GrammarStack> stacks = stacks_;
    for (const char32_t c : text) {
        stacks = advance(stacks, c);
        if (stacks.empty()) return false;
    }
    return true;
}

bool GrammarMatcher::is_complete() const {
    return std::any_of(stacks_.begin(), stacks_.end(), [](const GrammarStack& s) { return s.empty(); });
}

bool GrammarMatcher::can_continue() const {
    return std::any_of(stacks_.begin(), stacks_.end(), [](const GrammarStack& s) { return !s.empty(); });
}

}  // namespace strata
