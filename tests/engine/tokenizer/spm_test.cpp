// SPM tokenization on small hand-made vocabularies: score-ordered merging, space escaping and
// prefix, byte fallback (also for invalid UTF-8), special-token splitting, BOS/EOS, pieces,
// and the end-of-generation set.
#include <gtest/gtest.h>

#include <random>

#include "engine/core/error.h"
#include "tokenizer_test_util.h"

namespace strata {
namespace {

using Ids = std::vector<TokenId>;
constexpr TokenId kFirst = 259;          // first id after <unk> <s> </s> and the 256 byte tokens
const std::string kSp = "\xE2\x96\x81";  // U+2581

TEST(Spm, MergesTheHighestScoringPairFirst) {
    // a b c ab bc: "bc" outscores "ab", so "abc" is a + bc; swapped scores give ab + c.
    Tokenizer t1(test::small_spm({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -2}, {"bc", -1}}));
    EXPECT_EQ(t1.encode("abc", false), (Ids{kFirst, kFirst + 4}));
    Tokenizer t2(test::small_spm({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -1}, {"bc", -2}}));
    EXPECT_EQ(t2.encode("abc", false), (Ids{kFirst + 3, kFirst + 2}));
}

TEST(Spm, EqualScoresMergeLeftmostFirst) {
    Tokenizer t(test::small_spm({{"a", -5}, {"aa", -1}}));
    EXPECT_EQ(t.encode("aaa", false), (Ids{kFirst + 1, kFirst}));
    EXPECT_EQ(t.encode("aaaa", false), (Ids{kFirst + 1, kFirst + 1}));
}

TEST(Spm, MergesBuildLongTokensStepByStep) {
    // "hello" needs h+e, l+l, he+ll, hell+o; "hell" only forms from "he" and "ll".
    Tokenizer t(test::small_spm({{"h", -9},
                                 {"e", -9},
                                 {"l", -9},
                                 {"o", -9},
                                 {"he", -1},
                                 {"ll", -2},
                                 {"hell", -3},
                                 {"hello", -4}}));
    EXPECT_EQ(t.encode("hello", false), (Ids{kFirst + 7}));
    EXPECT_EQ(t.encode("hellohe", false), (Ids{kFirst + 7, kFirst + 4}));
}

TEST(Spm, SpacesBecomeU2581) {
    Tokenizer t(test::small_spm({{"a", -5}, {"b", -5}, {kSp, -5}, {kSp + "b", -1}}));
    const Ids ids = t.encode("a b  b", false);
    EXPECT_EQ(ids, (Ids{kFirst, kFirst + 3, kFirst + 2, kFirst + 3}));
    EXPECT_EQ(t.decode(ids), "a b  b");
    // A literal U+2581 in the input is indistinguishable from a space: the one lossy input.
    EXPECT_EQ(t.decode(t.encode(kSp + "b", false)), " b");
}

TEST(Spm, SpacePrefixAtStartAndAfterSpecialTokens) {
    Vocab v =
        test::small_spm({{"a", -5}, {kSp, -5}, {kSp + "a", -1}}, {{"<ctl>", TokenType::CONTROL}});
    v.add_space_prefix = true;
    Tokenizer t(v);
    const TokenId ctl = kFirst + 3;
    EXPECT_EQ(t.encode("a", false), (Ids{kFirst + 2}));
    EXPECT_EQ(t.encode("a<ctl>a", false, true), (Ids{kFirst + 2, ctl, kFirst + 2}));
    EXPECT_EQ(t.decode(t.encode("a", false)), "a");  // the prefix is taken off again
    EXPECT_EQ(t.decode(t.encode("a a", true)), "a a");
}

TEST(Spm, ByteFallbackForUncoveredCharacters) {
    Tokenizer t(test::small_spm({{"a", -5}}));
    EXPECT_EQ(t.encode("a\xC3\xA9", false),
              (Ids{kFirst, test::byte_id(0xC3), test::byte_id(0xA9)}));
    EXPECT_EQ(t.decode(t.encode("a\xC3\xA9", false)), "a\xC3\xA9");
    EXPECT_EQ(t.token_to_piece(test::byte_id(0x41)), "A");
}

TEST(Spm, InvalidUtf8GoesThroughByteFallbackAndDecodesBack) {
    Tokenizer t(test::small_spm({{"a", -5}, {"b", -5}, {"ab", -1}}));
    // A lone continuation byte, a truncated sequence, an overlong form: each byte by itself.
    const std::string bad =
        "a\x80"
        "b\xE2\x96"
        "ab\xC0\xAF";
    const Ids ids = t.encode(bad, false);
    EXPECT_EQ(
        ids, (Ids{kFirst, test::byte_id(0x80), kFirst + 1, test::byte_id(0xE2), test::byte_id(0x96),
                  kFirst + 2, test::byte_id(0xC0), test::byte_id(0xAF)}));
    EXPECT_EQ(t.decode(ids), bad);
}

TEST(Spm, RandomBytesNeverCrashAndDecodeBack) {
    Tokenizer t(test::small_spm({{"a", -5}, {kSp, -4}, {kSp + "a", -1}, {"\xC3\xA9", -3}}));
    std::mt19937 rng(7);
    for (int i = 0; i < 2000; ++i) {
        std::string s(rng() % 40, '\0');
        for (char& c : s)
            c = static_cast<char>(rng() % 256);
        if (s.find(kSp) != std::string::npos) continue;  // literal U+2581 reads as a space
        ASSERT_EQ(t.decode(t.encode(s, true)), s);
    }
}

TEST(Spm, EmptyTextAndBosEos) {
    Vocab v = test::small_spm({{"a", -5}});
    Tokenizer t(v);
    EXPECT_EQ(t.encode("", true), (Ids{1}));
    EXPECT_EQ(t.encode("", false), (Ids{}));
    EXPECT_EQ(t.encode("a", true), (Ids{1, kFirst}));
    v.add_bos = false;
    v.add_eos = true;
    EXPECT_EQ(Tokenizer(v).encode("a", true), (Ids{kFirst, 2}));
    EXPECT_EQ(Tokenizer(v).encode("a", false), (Ids{kFirst}));
    v.eos = kNoToken;  // asked for but absent: nothing added
    EXPECT_EQ(Tokenizer(v).encode("a", true), (Ids{kFirst}));
}

TEST(Spm, SpecialTokensParsedOnlyWhenAsked) {
    Tokenizer t(
        test::small_spm({{"<", -5}, {">", -5}, {"c", -5}, {"t", -5}, {"l", -5}},
                        {{"<ctl>", TokenType::CONTROL}, {"<ud>", TokenType::USER_DEFINED}}));
    const TokenId ctl = kFirst + 5, ud = kFirst + 6;
    EXPECT_EQ(t.encode("<ctl>", false, true), (Ids{ctl}));
    EXPECT_EQ(t.encode("<ctl>", false, false),
              (Ids{kFirst, kFirst + 2, kFirst + 3, kFirst + 4, kFirst + 1}));
    // USER_DEFINED tokens match in both modes (as Hugging Face's non-special added tokens).
    EXPECT_EQ(t.encode("<ud>", false, false), (Ids{ud}));
    EXPECT_EQ(t.encode("c<ud><ctl>t", false, true), (Ids{kFirst + 2, ud, ctl, kFirst + 3}));
    // <s> is CONTROL too: text spelling it is BOS only when parsed.
    EXPECT_EQ(t.encode("<s>", false, true), (Ids{1}));
}

TEST(Spm, SpecialTokensMatchLeftmostLongest) {
    Tokenizer t(test::small_spm({{"x", -5}, {"y", -5}, {"a", -5}, {"d", -5}},
                                {{"<c>", TokenType::CONTROL},
                                 {"<c>x", TokenType::CONTROL},
                                 {"ab", TokenType::USER_DEFINED},
                                 {"bcd", TokenType::USER_DEFINED}}));
    const TokenId c = kFirst + 4, cx = kFirst + 5, ab = kFirst + 6;
    EXPECT_EQ(t.encode("<c>xy", false, true), (Ids{cx, kFirst + 1}));
    EXPECT_EQ(t.encode("<c>y", false, true), (Ids{c, kFirst + 1}));
    // "ab" starts first, so "bcd" cannot match: a b|c d -> ab, c (byte fallback), d.
    EXPECT_EQ(t.encode("abcd", false, true), (Ids{ab, test::byte_id('c'), kFirst + 3}));
    // parse_special=false: the longer CONTROL match must not hide a USER_DEFINED one.
    EXPECT_EQ(t.encode("<c>x", false, false).size(), 4u);
}

TEST(Spm, UserDefinedPiecesWithEscapedSpacesMatchSpaces) {
    // Converters write some user-defined space runs as U+2581 and some as spaces.
    Tokenizer t(test::small_spm(
        {{"a", -5}}, {{kSp + kSp, TokenType::USER_DEFINED}, {"   ", TokenType::USER_DEFINED}}));
    EXPECT_EQ(t.encode("a  a", false), (Ids{kFirst, kFirst + 1, kFirst}));
    EXPECT_EQ(t.encode("a   a", false), (Ids{kFirst, kFirst + 2, kFirst}));
    EXPECT_EQ(t.decode(t.encode("a  a   a", false)), "a  a   a");
}

TEST(Spm, PiecesOfEachTokenType) {
    Tokenizer t(test::small_spm({{kSp + "a", -1}}, {{"<ctl>", TokenType::CONTROL},
                                                    {"<ud>", TokenType::USER_DEFINED},
                                                    {"<un>", TokenType::UNUSED}}));
    EXPECT_EQ(t.token_to_piece(kFirst), " a");
    EXPECT_EQ(t.token_to_piece(kFirst + 1), "");
    EXPECT_EQ(t.token_to_piece(kFirst + 1, true), "<ctl>");
    EXPECT_EQ(t.token_to_piece(kFirst + 2), "<ud>");
    EXPECT_EQ(t.token_to_piece(kFirst + 3), "");
    EXPECT_EQ(t.token_to_piece(0), "");
    EXPECT_EQ(t.token_to_piece(0, true), "<unk>");
    EXPECT_EQ(t.token_to_piece(test::byte_id(0xFF)), "\xFF");
    EXPECT_THROW(t.token_to_piece(kFirst + 4), ArgumentError);
    EXPECT_THROW(t.token_to_piece(-1), ArgumentError);
    EXPECT_EQ(t.decode(Ids{1, kFirst, 2}, true), "<s> a</s>");
}

TEST(Spm, EndOfGenerationSet) {
    Vocab v = test::small_spm({{"a", -5}}, {{"<end_of_turn>", TokenType::CONTROL},
                                            {"<|im_end|>", TokenType::CONTROL},
                                            {"</s2>", TokenType::CONTROL},
                                            {"<|eot_id|>", TokenType::USER_DEFINED}});
    const TokenId end_of_turn = kFirst + 1, im_end = kFirst + 2;
    Tokenizer t(v);
    EXPECT_EQ(t.eot(), im_end);  // found by text; <|eot_id|> is USER_DEFINED here, so skipped
    // eos, and the CONTROL tokens spelled like ends.
    EXPECT_EQ(t.eog_ids(), (Ids{2, end_of_turn, im_end}));
    EXPECT_TRUE(t.is_eog(2));
    EXPECT_FALSE(t.is_eog(kFirst));
    EXPECT_FALSE(t.is_eog(kFirst + 4));  // USER_DEFINED: text that only looks like an end
    v.eot = kFirst + 3;
    EXPECT_EQ(Tokenizer(v).eot(), kFirst + 3);  // the file's eot wins
    EXPECT_TRUE(Tokenizer(v).is_eog(kFirst + 3));
}

TEST(Spm, LongInputWithoutSpaces) {
    // One fragment of 200k characters: merging must not be quadratic.
    Tokenizer t(test::small_spm({{"a", -5}, {"b", -5}, {"ab", -1}, {"abab", -2}}));
    std::string s;
    for (int i = 0; i < 100000; ++i)
        s += "ab";
    const Ids ids = t.encode(s, false);
    EXPECT_EQ(ids.size(), 50000u);
    EXPECT_EQ(t.decode(ids), s);
}

}  // namespace
}  // namespace strata
