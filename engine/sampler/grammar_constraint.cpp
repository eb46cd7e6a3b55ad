// Grammar-constrained sampling over a vocabulary (grammar_constraint.h).
#include "engine/sampler/grammar_constraint.h"

#include <algorithm>
#include <cmath>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"

namespace strata {
namespace {

// The complete code points of `bytes`; `rest` gets an unfinished character at the end.
// Invalid bytes become U+FFFD (they can match only a class that allows it).
std::u32string decode(std::string_view bytes, std::string* rest) {
    std::u32string out;
    const size_t tail = utf8_incomplete_tail(bytes);
    const std::string_view whole = bytes.substr(0, bytes.size() - tail);
    for (size_t i = 0; i < whole.size();) {
        const size_t n = utf8_char_length(whole, i);
        out.push_back(n == 0 ? U'\uFFFD' : utf8_decode(whole, i, n));
        i += n == 0 ? 1 : n;
    }
    if (rest) *rest = std::string(bytes.substr(bytes.size() - tail));
    return out;
}

// The code points an unfinished UTF-8 character `tail` (a lead byte and maybe continuation
// bytes) can still become: the missing bits all zero (no shorter than its length needs), then all one.
std::pair<char32_t, char32_t> partial_range(std::string_view tail) {
    const auto lead = static_cast<unsigned char>(tail[0]);
    const int len = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    char32_t v = lead & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t i = 1; i < tail.size(); ++i) v = (v << 6) | (static_cast<unsigned char>(tail[i]) & 0x3F);
    const int missing = 6 * (len - static_cast<int>(tail.size()));
    // The shortest form only: E0 starts U+0800 and up, F0 U+10000 and up.
    const char32_t lowest = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    const char32_t lo = v << missing;
    return {std::max(lo, lowest), static_cast<char32_t>(lo | ((char32_t{1} << missing) - 1))};
}

bool may_match(const GrammarElement& el, std::pair<char32_t, char32_t> r) {
    for (const auto& [lo, hi] : el.ranges) {
        if (!el.negated && lo <= r.second && hi >= r.first) return true;
        if (el.negated && lo <= r.first && hi >= r.second) return false;
    }
    return el.negated;
}

// Whether some stack can take a character that starts with `tail`.
bool tail_fits(const Grammar& g, const std::vector<GrammarStack>& stacks, std::string_view tail) {
    const auto range = partial_range(tail);
    return std::any_of(stacks.begin(), stacks.end(), [&](const GrammarStack& s) {
        return !s.empty() && may_match(g.at(s.back().rule, s.back().alt, s.back().idx), range);
    });
}

}  // namespace

std::shared_ptr<const GrammarVocab> GrammarVocab::from_tokenizer(const Tokenizer& tok) {
    auto v = std::make_shared<GrammarVocab>();
    const int32_t n = tok.n_tokens();
    v->text.resize(static_cast<size_t>(n));
    v->kind.resize(static_cast<size_t>(n), Kind::Text);
    for (int32_t id = 0; id < n; ++id) {
        // Control, unknown and unused tokens spell nothing without `special`: never allowed.
        const auto i = static_cast<size_t>(id);
        if (tok.is_eog(id)) {
            v->kind[i] = Kind::EndOfGeneration;
        } else {
            v->text[i] = tok.token_to_piece(id, /*special=*/false);
            if (v->text[i].empty()) v->kind[i] = Kind::Control;
        }
    }
    v->index();
    return v;
}

void GrammarVocab::index() {
    const size_t n = text.size();
    code_points.assign(n, {});
    partial_tail.assign(n, 0);
    sorted.clear();
    for (size_t id = 0; id < n; ++id) {
        if (kind[id] != Kind::Text || text[id].empty()) continue;
        std::string rest;
        code_points[id] = decode(text[id], &rest);
        partial_tail[id] = static_cast<uint8_t>(rest.size());
        sorted.push_back(static_cast<int32_t>(id));
    }
    std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) {
        return code_points[static_cast<size_t>(a)] < code_points[static_cast<size_t>(b)];
    });
    shared_prefix.assign(sorted.size(), 0);
    for (size_t i = 1; i < sorted.size(); ++i) {
        const std::u32string& a = code_points[static_cast<size_t>(sorted[i - 1])];
        const std::u32string& b = code_points[static_cast<size_t>(sorted[i])];
        uint32_t k = 0;
        while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
        shared_prefix[i] = k;
    }
}

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocab> vocab)
    : vocab_(std::move(vocab)), matcher_(std::move(grammar)) {}

void GrammarConstraint::reset() {
    matcher_.reset();
    pending_.clear();
}

bool GrammarConstraint::allows_text(const std::string& bytes) const {
    if (bytes.empty()) return false;  // a token that adds nothing cannot move the grammar on
    std::string rest;
    const std::u32string cps = decode(pending_ + bytes, &rest);
    if (!cps.empty() && !matcher_.allows_next(cps[0])) return false;
    if (rest.empty()) return matcher_.allows(cps);
    std::vector<GrammarStack> stacks = matcher_.stacks();
    for (const char32_t c : cps) {
        stacks = matcher_.advance(stacks, c);
        if (stacks.empty()) return false;
    }
    return tail_fits(matcher_.grammar(), stacks, rest);
}

// Walks the sorted tokens as a trie: levels[d] holds the stacks after the first d code points
// of the current token, reused by the next token for the prefix they share.
std::vector<bool> GrammarConstraint::allowed_tokens() const {
    const GrammarVocab& v = *vocab_;
    std::vector<bool> ok(v.text.size(), false);
    std::vector<std::vector<GrammarStack>> levels{matcher_.stacks()};
    for (size_t i = 0; i < v.sorted.size(); ++i) {
        const auto id = static_cast<size_t>(v.sorted[i]);
        const std::u32string& cps = v.code_points[id];
        size_t depth = std::min<size_t>(v.shared_prefix[i], levels.size() - 1);
        levels.resize(depth + 1);
        bool alive = !levels[depth].empty();
        while (alive && depth < cps.size()) {
            levels.push_back(matcher_.advance(levels[depth], cps[depth]));
            ++depth;
            alive = !levels[depth].empty();
        }
        if (!alive) continue;
        if (v.partial_tail[id] > 0) {
            alive = tail_fits(matcher_.grammar(), levels[depth], std::string_view(v.text[id]).substr(v.text[id].size() - v.partial_tail[id]));
        }
        ok[id] = alive;
    }
    return ok;
}

void GrammarConstraint::mask(std::span<float> logits) const {
    const bool complete = is_complete();
    const std::vector<bool>* allowed = nullptr;
    if (pending_.empty()) {
        auto it = cache_.find(matcher_.stacks());
        if (it == cache_.end()) {
            if (cache_.size() >= 64) cache_.clear();
            it = cache_.emplace(matcher_.stacks(), allowed_tokens()).first;
        }
        allowed = &it->second;
    }
    for (size_t id = 0; id < logits.size(); ++id) {
        if (!(logits[id] > -INFINITY)) continue;
        bool ok = false;
        if (id < vocab_->kind.size()) {
            switch (vocab_->kind[id]) {
                case GrammarVocab::Kind::EndOfGeneration: ok = complete; break;
                case GrammarVocab::Kind::Control: ok = false; break;
                case GrammarVocab::Kind::Text: ok = allowed ? (*allowed)[id] : allows_text(vocab_->text[id]); break;
            }
        }
        if (!ok) logits[id] = -INFINITY;
    }
}

void GrammarConstraint::accept(int32_t token) {
    const auto id = static_cast<size_t>(token);
    if (token < 0 || id >= vocab_->kind.size()) throw ArgumentError(cat("grammar: token ", token, " is outside the vocabulary"));
    if (vocab_->kind[id] == GrammarVocab::Kind::EndOfGeneration) {
        if (!is_complete()) throw ArgumentError(cat("grammar: end of generation (token ", token, ") before the grammar is complete"));
        return;
    }
    if (vocab_->kind[id] == GrammarVocab::Kind::Control || !allows_text(vocab_->text[id])) {
        throw ArgumentError(cat("grammar: token ", token, " does not continue the grammar"));
    }
    std::string rest;
    for (const char32_t c : decode(pending_ + vocab_->text[id], &rest)) matcher_.accept(c);
    pending_ = std::move(rest);
}

}  // namespace strata
