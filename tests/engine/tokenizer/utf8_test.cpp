// UTF-8 stepping and validation: the forms RFC 3629 forbids, truncation, and the incomplete
// tail a streaming decoder holds back.
#include "engine/tokenizer/utf8.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(Utf8, CharLengthOfValidSequences) {
    EXPECT_EQ(utf8_char_length("a", 0), 1u);
    EXPECT_EQ(utf8_char_length("\xC3\xA9", 0), 2u);          // é
    EXPECT_EQ(utf8_char_length("\xE2\x96\x81", 0), 3u);      // U+2581
    EXPECT_EQ(utf8_char_length("\xF0\x9F\x98\x80", 0), 4u);  // U+1F600
    EXPECT_EQ(utf8_char_length("\xF4\x8F\xBF\xBF", 0), 4u);  // U+10FFFF
}

TEST(Utf8, InvalidSequencesHaveLengthZero) {
    EXPECT_EQ(utf8_char_length("\x80", 0), 0u);              // stray continuation
    EXPECT_EQ(utf8_char_length("\xC0\x80", 0), 0u);          // overlong NUL
    EXPECT_EQ(utf8_char_length("\xE0\x80\xAF", 0), 0u);      // overlong '/'
    EXPECT_EQ(utf8_char_length("\xED\xA0\x80", 0), 0u);      // surrogate U+D800
    EXPECT_EQ(utf8_char_length("\xF4\x90\x80\x80", 0), 0u);  // U+110000
    EXPECT_EQ(utf8_char_length("\xF5\x80\x80\x80", 0), 0u);  // lead byte past F4
    EXPECT_EQ(utf8_char_length("\xE2\x96", 0), 0u);          // truncated
    EXPECT_EQ(utf8_char_length("\xE2\x41\x81", 0), 0u);      // broken continuation
    EXPECT_EQ(utf8_unit_length("\xFF", 0), 1u);
}

TEST(Utf8, Validity) {
    EXPECT_TRUE(utf8_is_valid(""));
    EXPECT_TRUE(utf8_is_valid("héllo 你好 😀"));
    EXPECT_FALSE(utf8_is_valid("abc\xFF"));
    EXPECT_FALSE(utf8_is_valid("\xF0\x9F\x98"));
}

TEST(Utf8, IncompleteTail) {
    EXPECT_EQ(utf8_incomplete_tail(""), 0u);
    EXPECT_EQ(utf8_incomplete_tail("abc"), 0u);
    EXPECT_EQ(utf8_incomplete_tail("a\xC3"), 1u);
    EXPECT_EQ(utf8_incomplete_tail("a\xE2\x96"), 2u);
    EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98"), 3u);
    EXPECT_EQ(utf8_incomplete_tail("\xF0\x9F\x98\x80"), 0u);  // complete
    EXPECT_EQ(utf8_incomplete_tail("\xC3\xA9"), 0u);
    EXPECT_EQ(utf8_incomplete_tail("\x80\x80\x80"), 0u);  // junk is not "incomplete"
    EXPECT_EQ(utf8_incomplete_tail("\xE0\x80"), 0u);      // can never complete (overlong)
    EXPECT_EQ(utf8_incomplete_tail("\xFF"), 0u);
}

TEST(Utf8, SanitizeReplacesEachInvalidByte) {
    EXPECT_EQ(utf8_sanitize("a\xFF"
                            "b"),
              "a\xEF\xBF\xBD"
              "b");
    EXPECT_EQ(utf8_sanitize("\xE2\x96"), "\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(utf8_sanitize("ok é"), "ok é");
}

TEST(Utf8, DecodeAndAppendRoundTrip) {
    for (char32_t cp : {U'a', U'\u00E9', U'\u2581', U'\U0001F600', U'\U0010FFFF'}) {
        std::string s;
        utf8_append(s, cp);
        ASSERT_EQ(utf8_char_length(s, 0), s.size());
        EXPECT_EQ(utf8_decode(s, 0, s.size()), cp);
    }
}

}  // namespace
}  // namespace strata
