// Streaming detokenization: characters split across byte tokens are held until complete,
// bytes that can never be UTF-8 come out as U+FFFD, and the stream equals decode().
#include "engine/tokenizer/detokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "engine/tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace strata {
namespace {

using test::byte_id;
const std::string kReplacement = "\xEF\xBF\xBD";

TEST(Detokenizer, HoldsPartialCharactersAcrossTokens) {
    const Tokenizer t(test::small_spm({{"a", -1}}));
    Detokenizer d(t);
    EXPECT_EQ(d.push(259), "a");
    EXPECT_EQ(d.push(byte_id(0xC3)), "");
    EXPECT_EQ(d.pending_bytes(), 1u);
    EXPECT_EQ(d.push(byte_id(0xA9)), "\xC3\xA9");  // é
    EXPECT_EQ(d.push(byte_id(0xF0)), "");
    EXPECT_EQ(d.push(byte_id(0x9F)), "");
    EXPECT_EQ(d.push(byte_id(0x98)), "");
    EXPECT_EQ(d.pending_bytes(), 3u);
    EXPECT_EQ(d.push(byte_id(0x80)), "\xF0\x9F\x98\x80");  // U+1F600
    EXPECT_EQ(d.pending_bytes(), 0u);
    EXPECT_EQ(d.flush(), "");
}

TEST(Detokenizer, InvalidBytesBecomeReplacementCharacters) {
    const Tokenizer t(test::small_spm({{"a", -1}}));
    Detokenizer d(t);
    EXPECT_EQ(d.push(byte_id(0xFF)), kReplacement);  // can never start a character
    EXPECT_EQ(d.push(byte_id(0xC3)), "");            // may start one...
    EXPECT_EQ(d.push(259), kReplacement + "a");      // ...but "a" does not continue it
    EXPECT_EQ(d.push(byte_id(0xE2)), "");
    EXPECT_EQ(d.push(byte_id(0x96)), "");
    EXPECT_EQ(d.flush(), kReplacement + kReplacement);  // the stream ended inside one
    EXPECT_EQ(d.push(259), "a");                        // a new stream
}

TEST(Detokenizer, ControlTokensOnlyWhenAsked) {
    const Tokenizer t(test::small_spm({{"a", -1}}));
    Detokenizer plain(t), special(t, true);
    EXPECT_EQ(plain.push(1), "");
    EXPECT_EQ(special.push(1), "<s>");
    EXPECT_EQ(plain.push(259), "a");
}

TEST(Detokenizer, DropsTheSpacePrefixOnce) {
    Vocab v =
        test::small_spm({{"\xE2\x96\x81"
                          "a",
                          -1}});
    v.add_space_prefix = true;
    const Tokenizer t(v);
    const std::vector<TokenId> ids = t.encode("a a", true);  // <s> ▁a ▁a
    ASSERT_EQ(ids, (std::vector<TokenId>{1, 259, 259}));
    Detokenizer d(t);
    EXPECT_EQ(d.push(ids[0]), "");
    EXPECT_EQ(d.push(ids[1]), "a");
    EXPECT_EQ(d.push(ids[2]), " a");
    EXPECT_EQ(t.decode(ids), "a a");
}

// Any id sequence: every step is valid UTF-8, and for ids whose decode() is valid UTF-8 the
// concatenated stream equals it.
TEST(Detokenizer, RandomIdsAlwaysGiveValidUtf8) {
    const Tokenizer t(test::small_spm({{"a", -1}, {"\xC3\xA9", -1}}));
    std::mt19937 rng(5);
    int equal_checked = 0;
    for (int i = 0; i < 3000; ++i) {
        std::vector<TokenId> ids(rng() % 12);
        for (TokenId& id : ids) {
            // Mostly bytes of real characters, so that some sequences are valid.
            static const uint8_t kBytes[] = {0xC3, 0xA9, 0xE4, 0xBD, 0xA0, 0xF0,
                                             0x9F, 0x98, 0x80, 'x',  0xFF};
            id = rng() % 4 == 0 ? static_cast<TokenId>(259 + rng() % 2)
                                : byte_id(kBytes[rng() % sizeof(kBytes)]);
        }
        Detokenizer d(t);
        std::string streamed;
        for (TokenId id : ids) {
            std::string part = d.push(id);
            ASSERT_TRUE(utf8_is_valid(part));
            streamed += part;
        }
        std::string tail = d.flush();
        ASSERT_TRUE(utf8_is_valid(tail));
        streamed += tail;
        const std::string decoded = t.decode(ids);
        if (utf8_is_valid(decoded)) {
            ASSERT_EQ(streamed, decoded);
            ++equal_checked;
        } else {
            ASSERT_EQ(streamed, utf8_sanitize(decoded));
        }
    }
    EXPECT_GT(equal_checked, 300);
}

}  // namespace
}  // namespace strata
