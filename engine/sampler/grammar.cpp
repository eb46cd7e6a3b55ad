// GBNF parser (grammar.h).
#include "engine/sampler/grammar.h"

#include <cctype>
#include <map>

#include "engine/sampler/grammar_matcher.h"
#include "engine/tokenizer/utf8.h"

namespace strata {

bool GrammarElement::matches(char32_t c) const {
    bool in = false;
    for (const auto& [lo, hi] : ranges) in = in || (c >= lo && c <= hi);
    return in != negated;
}

namespace {

constexpr int kMaxRepeat = 1000;
constexpr int kMaxDepth = 200;

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

class GbnfParser {
public:
    GbnfParser(std::string_view text, std::string_view what) : src_(text), what_(what) {}

    Grammar run() {
        skip_space();
        while (pos_ < src_.size()) {
            const size_t at = pos_;
            const std::string name = parse_name();
            skip_space();
            if (!src_.substr(pos_).starts_with("::=")) fail("expected '::=' after the rule name '" + name + "'", pos_);
            pos_ += 3;
            const uint32_t id = rule_id(name, at);
            if (defined_.count(id)) fail("rule '" + name + "' is defined twice", at);
            defined_[id] = true;
            g_.rules[id] = parse_alternatives(name, 0);
            skip_space();
        }
        for (uint32_t i = 0; i < g_.names.size(); ++i) {
            if (!defined_.count(i)) fail("rule '" + g_.names[i] + "' is used but never defined", first_use_[i]);
        }
        const auto root = ids_.find("root");
        if (root == ids_.end()) throw GrammarError(cat(what_, ": no 'root' rule (the grammar starts there)"));
        g_.root = root->second;
        return std::move(g_);
    }

private:
    [[noreturn]] void fail(const std::string& msg, size_t at) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && i < src_.size(); ++i) {
            if (src_[i] == '\n') { ++line; col = 1; } else { ++col; }
        }
        throw GrammarError(cat(what_, ": line ", line, ", column ", col, ": ", msg));
    }

    void skip_space() {
        while (pos_ < src_.size()) {
            const char c = src_[pos_];
            if (c == '#') {
                while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
            } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                ++pos_;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        if (pos_ == start) fail("expected a rule name", start);
        return std::string(src_.substr(start, pos_ - start));
    }

    uint32_t rule_id(const std::string& name, size_t at) {
        auto [it, added] = ids_.emplace(name, static_cast<uint32_t>(g_.names.size()));
        if (added) {
            g_.names.push_back(name);
            g_.rules.emplace_back();
            first_use_.push_back(at);
        }
        return it->second;
    }

    uint32_t new_rule(const std::string& parent) {
        const uint32_t id = rule_id(parent + "-" + std::to_string(++n_generated_), pos_);
        defined_[id] = true;
        return id;
    }

    // A rule name followed by ::= starts the next rule: the current sequence ends before it.
    bool at_rule_start() const {
        size_t p = pos_;
        while (p < src_.size() && is_name_char(src_[p])) ++p;
        if (p == pos_) return false;
        while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n' || src_[p] == '\r')) ++p;
        return src_.substr(p).starts_with("::=");
    }

    std::vector<GrammarSequence> parse_alternatives(const std::string& rule, int depth) {
        if (depth > kMaxDepth) fail(cat("groups nested deeper than ", kMaxDepth), pos_);
        std::vector<GrammarSequence> alts;
        alts.push_back(parse_sequence(rule, depth));
        while (pos_ < src_.size() && src_[pos_] == '|') {
            ++pos_;
            alts.push_back(parse_sequence(rule, depth));
        }
        return alts;
    }

    GrammarSequence parse_sequence(const std::string& rule, int depth);
    void apply_quantifier(GrammarSequence& seq, size_t item_start, const std::string& rule);
    bool parse_repeat_bounds(int& min, int& max);
    GrammarElement ref_to(uint32_t id) const {
        GrammarElement el;
        el.kind = GrammarElement::Kind::RuleRef;
        el.rule = id;
        return el;
    }
    char32_t parse_char(size_t& p, bool in_class);
    GrammarElement parse_class();

    std::string_view src_;
    std::string what_;
    size_t pos_ = 0;
    Grammar g_;
    std::map<std::string, uint32_t> ids_;
    std::map<uint32_t, bool> defined_;
    std::vector<size_t> first_use_;
    int n_generated_ = 0;
};

// One code point of a literal or class, with escapes \n \r \t \\ \" \] \[ \- \xHH \uHHHH \UHHHHHHHH.
char32_t GbnfParser::parse_char(size_t& p, bool in_class) {
    if (p >= src_.size()) fail(in_class ? "unclosed '['" : "unclosed string", p);
    if (src_[p] != '\\') {
        const size_t n = utf8_char_length(src_, p);
        if (n == 0) fail("invalid UTF-8", p);
        const char32_t c = utf8_decode(src_, p, n);
        p += n;
        return c;
    }
    if (++p >= src_.size()) fail("a '\\' ends the grammar", p);
    const char e = src_[p++];
    const int hex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (hex > 0) {
        char32_t v = 0;
        for (int i = 0; i < hex; ++i, ++p) {
            if (p >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[p]))) fail("expected a hex digit", p);
            const char h = static_cast<char>(std::tolower(static_cast<unsigned char>(src_[p])));
            v = v * 16 + static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : h - 'a' + 10);
        }
        return v;
    }
    switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case ']': case '[': case '-': case '/': case '\'': return static_cast<char32_t>(e);
        default: fail(cat("unknown escape '\\", e, "'"), p - 2);
    }
}

GrammarElement GbnfParser::parse_class() {
    GrammarElement el;
    el.kind = GrammarElement::Kind::Chars;
    ++pos_;  // '['
    if (pos_ < src_.size() && src_[pos_] == '^') {
        el.negated = true;
        ++pos_;
    }
    while (true) {
        if (pos_ >= src_.size()) fail("unclosed '['", pos_);
        if (src_[pos_] == ']') break;
        const char32_t lo = parse_char(pos_, true);
        char32_t hi = lo;
        if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
            ++pos_;
            hi = parse_char(pos_, true);
            if (hi < lo) fail("character range with its end before its start", pos_);
        }
        el.ranges.emplace_back(lo, hi);
    }
    ++pos_;
    return el;
}

GrammarSequence GbnfParser::parse_sequence(const std::string& rule, int depth) {
    GrammarSequence seq;
    for (;;) {
        skip_space();
        if (pos_ >= src_.size() || src_[pos_] == '|' || src_[pos_] == ')' || at_rule_start()) break;
        const size_t item_start = seq.size();
        const char c = src_[pos_];
        if (c == '"') {
            size_t p = pos_ + 1;
            while (true) {
                if (p >= src_.size()) fail("unclosed string", pos_);
                if (src_[p] == '"') break;
                GrammarElement el;
                el.kind = GrammarElement::Kind::Chars;
                const char32_t ch = parse_char(p, false);
                el.ranges.emplace_back(ch, ch);
                seq.push_back(std::move(el));
            }
            pos_ = p + 1;
        } else if (c == '[') {
            seq.push_back(parse_class());
        } else if (c == '.') {
            ++pos_;
            GrammarElement el;
            el.kind = GrammarElement::Kind::Chars;
            el.negated = true;  // [^\n]? llama.cpp's '.' is any character
            el.ranges.clear();
            seq.push_back(std::move(el));
        } else if (c == '(') {
            ++pos_;
            const uint32_t id = new_rule(rule);
            g_.rules[id] = parse_alternatives(rule, depth + 1);
            skip_space();
            if (pos_ >= src_.size() || src_[pos_] != ')') fail("expected ')'", pos_);
            ++pos_;
            GrammarElement el;
            el.kind = GrammarElement::Kind::RuleRef;
            el.rule = id;
            seq.push_back(std::move(el));
        } else if (is_name_char(c)) {
            const size_t at = pos_;
            GrammarElement el;
            el.kind = GrammarElement::Kind::RuleRef;
            el.rule = rule_id(parse_name(), at);
            seq.push_back(std::move(el));
        } else {
            fail(cat("unexpected '", c, "'"), pos_);
        }
        apply_quantifier(seq, item_start, rule);
    }
    seq.push_back(GrammarElement{});
    return seq;
}

// {m}, {m,}, {m,n} after the '{'.
bool GbnfParser::parse_repeat_bounds(int& min, int& max) {
    auto number = [&] {
        const size_t start = pos_;
        long v = 0;
        while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) {
            v = v * 10 + (src_[pos_++] - '0');
            if (v > kMaxRepeat) fail(cat("repetition count above ", kMaxRepeat), start);
        }
        if (pos_ == start) fail("expected a number in '{m,n}'", start);
        return static_cast<int>(v);
    };
    ++pos_;
    skip_space();
    min = number();
    skip_space();
    max = min;
    if (pos_ < src_.size() && src_[pos_] == ',') {
        ++pos_;
        skip_space();
        max = (pos_ < src_.size() && src_[pos_] == '}') ? -1 : number();
        skip_space();
    }
    if (pos_ >= src_.size() || src_[pos_] != '}') fail("expected '}' closing the repetition", pos_);
    ++pos_;
    if (max != -1 && max < min) fail(cat("repetition {", min, ",", max, "} has max < min"), pos_);
    return true;
}

// Rewrites the item seq[item_start..] per a following * + ? {m,n}: X* -> R ::= X R | (empty);
// X{m,n} -> m copies, then n-m nested optionals.
void GbnfParser::apply_quantifier(GrammarSequence& seq, size_t item_start, const std::string& rule) {
    const size_t save = pos_;
    skip_space();
    const char q = pos_ < src_.size() ? src_[pos_] : '\0';
    if (q != '*' && q != '+' && q != '?' && q != '{') {
        pos_ = save;
        return;
    }
    int min = 0, max = -1;
    if (q == '{') {
        parse_repeat_bounds(min, max);
    } else {
        ++pos_;
        min = q == '+' ? 1 : 0;
        max = q == '?' ? 1 : -1;
    }
    GrammarSequence item(seq.begin() + static_cast<std::ptrdiff_t>(item_start), seq.end());
    seq.resize(item_start);
    GrammarElement unit = item.size() == 1 ? item[0] : GrammarElement{};
    if (item.size() != 1) {
        const uint32_t id = new_rule(rule);
        item.push_back(GrammarElement{});
        g_.rules[id] = {item};
        unit = ref_to(id);
    }
    for (int i = 0; i < min; ++i) seq.push_back(unit);
    if (max == -1) {
        const uint32_t id = new_rule(rule);
        g_.rules[id] = {GrammarSequence{unit, ref_to(id), GrammarElement{}}, GrammarSequence{GrammarElement{}}};
        seq.push_back(ref_to(id));
        return;
    }
    uint32_t inner = 0;
    for (int k = 0; k < max - min; ++k) {
        const uint32_t id = new_rule(rule);
        GrammarSequence some = k == 0 ? GrammarSequence{unit, GrammarElement{}} : GrammarSequence{unit, ref_to(inner), GrammarElement{}};
        g_.rules[id] = {some, GrammarSequence{GrammarElement{}}};
        inner = id;
    }
    if (max > min) seq.push_back(ref_to(inner));
}

}  // namespace

Grammar parse_gbnf(std::string_view text, std::string_view what) {
    Grammar g = GbnfParser(text, what).run();
    check_not_left_recursive(g, what);
    return g;
}

}  // namespace strata
