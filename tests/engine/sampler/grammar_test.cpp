// GBNF parse errors name the line, column and what was expected; undefined rules, a missing
// root and left recursion are refused; the token-level constraint masks tokens that cannot
// continue the grammar and allows the end token only where the grammar is complete. What the
// matcher accepts is checked against Python by grammar_oracle.py.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sampler/grammar_constraint.h"
#include "engine/sampler/sampler.h"

namespace strata {
namespace {

std::string error_of(const std::string& text) {
    try {
        parse_gbnf(text, "--grammar");
    } catch (const GrammarError& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(Gbnf, ErrorsNameLineColumnAndWhat) {
    EXPECT_EQ(error_of("root ::= \"a\"\nx ::= y"), "--grammar: line 2, column 7: rule 'y' is used but never defined");
    EXPECT_EQ(error_of("root ::= (\"a\" | \"b\""), "--grammar: line 1, column 20: expected ')'");
    EXPECT_EQ(error_of("root = \"a\""), "--grammar: line 1, column 6: expected '::=' after the rule name 'root'");
    EXPECT_EQ(error_of("root ::= \"abc"), "--grammar: line 1, column 10: unclosed string");
    EXPECT_EQ(error_of("root ::= [a-"), "--grammar: line 1, column 13: unclosed '['");
    EXPECT_EQ(error_of("root ::= [z-a]"), "--grammar: line 1, column 14: character range with its end before its start");
    EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "--grammar: line 1, column 18: repetition {3,2} has max < min");
    EXPECT_EQ(error_of("r ::= \"a\""), "--grammar: no 'root' rule (the grammar starts there)");
    EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "--grammar: line 2, column 1: rule 'root' is defined twice");
    EXPECT_EQ(error_of("root ::= \"\\q\""), "--grammar: line 1, column 11: unknown escape '\\q'");
    EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("left-recursive at rule 'root'"), std::string::npos);
    EXPECT_NE(error_of("root ::= x\nx ::= \"\"? root").find("left-recursive"), std::string::npos);
    EXPECT_NE(error_of("root ::= \"a\"{1001}").find("above 1000"), std::string::npos);
}

TEST(GrammarConstraint, MasksTokensAndAllowsTheEndOnlyWhenComplete) {
    auto g = std::make_shared<const Grammar>(parse_gbnf("root ::= \"ab\" [0-9]+"));
    auto v = std::make_shared<GrammarVocab>();
    v->text = {"a", "ab", "b", "1", "12x", "", "9", "\xC3", ""};
    v->kind.assign(v->text.size(), GrammarVocab::Kind::Text);
    v->kind[5] = GrammarVocab::Kind::EndOfGeneration;
    v->kind[8] = GrammarVocab::Kind::Control;
    v->index();
    GrammarConstraint c(g, v);
    auto allowed = [&] {
        std::vector<float> logits(v->text.size(), 1.0f);
        c.mask(logits);
        std::string ids;
        for (size_t i = 0; i < logits.size(); ++i) {
            if (logits[i] > -INFINITY) ids += std::to_string(i);
        }
        return ids;
    };
    EXPECT_EQ(allowed(), "01");  // "a", "ab"
    c.accept(0);
    EXPECT_EQ(allowed(), "2");   // "b"
    EXPECT_THROW(c.accept(3), ArgumentError);
    c.accept(2);
    EXPECT_EQ(allowed(), "36");  // digits; not the end yet
    c.accept(3);
    EXPECT_EQ(allowed(), "356");  // digits or the end
    EXPECT_TRUE(c.is_complete());
    c.reset();
    EXPECT_EQ(allowed(), "01");
}

TEST(GrammarConstraint, TheSamplerDrawsOnlyAllowedTokens) {
    auto g = std::make_shared<const Grammar>(parse_gbnf("root ::= (\"x\" | \"y\") \"z\""));
    auto v = std::make_shared<GrammarVocab>();
    v->text = {"x", "y", "z", "q", ""};
    v->kind.assign(v->text.size(), GrammarVocab::Kind::Text);
    v->kind[4] = GrammarVocab::Kind::EndOfGeneration;
    v->index();
    SamplerParams p;
    p.seed = 7;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    for (int round = 0; round < 20; ++round) {
        Sampler s(p, 5);
        s.constrain(g, v);
        const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 5.0f, 4.0f};  // q and the end are likeliest
        p.seed = static_cast<uint32_t>(round);
        const int32_t first = s.sample(logits);
        EXPECT_TRUE(first == 0 || first == 1) << first;
        EXPECT_EQ(s.sample(logits), 2);
        EXPECT_EQ(s.sample(logits), 4);
    }
}

}  // namespace
}  // namespace strata
