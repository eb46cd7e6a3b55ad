// Byte-level BPE: the pre-tokenizer regexes, the byte <-> unicode table, rank-ordered merging
// on a tiny vocabulary, invalid UTF-8, and GPT-2 on random bytes and on 1 MB of text.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <random>

#include "engine/core/error.h"
#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace strata {
namespace {

using Ids = std::vector<TokenId>;
using Words = std::vector<std::string>;

Words split(const std::string& pre, const std::string& text) {
    Words out;
    for (std::string_view w : PreTokenizer(pre).split(text))
        out.emplace_back(w);
    return out;
}

TEST(PreTokenizer, Gpt2) {
    EXPECT_EQ(split("gpt-2", "Hello world's 123  x\n\ny"),
              (Words{"Hello", " world", "'s", " 123", " ", " x", "\n", "\n", "y"}));
    EXPECT_EQ(split("gpt-2", "I'M ok"), (Words{"I", "'", "M", " ok"}));  // case-sensitive
    EXPECT_EQ(split("default", "a  b"), split("gpt-2", "a  b"));
}

TEST(PreTokenizer, Llama3) {
    EXPECT_EQ(split("llama-bpe", "I'M 12345 ok!!\n\n  x"),
              (Words{"I", "'M", " ", "123", "45", " ok", "!!\n\n", " ", " x"}));
    EXPECT_EQ(split("llama3", "(hi)"), (Words{"(hi", ")"}));
}

TEST(PreTokenizer, Qwen2SplitsEveryDigit) {
    EXPECT_EQ(split("qwen2", "x 123"), (Words{"x", " ", "1", "2", "3"}));
}

TEST(PreTokenizer, UnicodeProperties) {
    // \p{L} covers CJK and accented letters, \p{N} Arabic-Indic digits; U+3000 is \s.
    EXPECT_EQ(split("gpt-2", "héllo 你好\xE3\x80\x80\xD9\xA1\xD9\xA2"),
              (Words{"héllo", " 你好", "\xE3\x80\x80", "\xD9\xA1\xD9\xA2"}));
}

TEST(PreTokenizer, InvalidUtf8BytesAreWordsOfTheirOwn) {
    const std::string text =
        "ab\xFF"
        "cd \xC3 e";
    const Words words = split("llama-bpe", text);
    EXPECT_EQ(words, (Words{"ab", "\xFF", "cd", " ", "\xC3", " e"}));
    std::string joined;
    for (const auto& w : words)
        joined += w;
    EXPECT_EQ(joined, text);
}

TEST(PreTokenizer, UnknownNameIsUnsupported) {
    try {
        PreTokenizer p("starcoder-9");
        FAIL() << "no error";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("'starcoder-9'"), std::string::npos) << e.what();
    }
}

TEST(ByteLevel, TableIsGpt2s) {
    const auto& chars = byte_level_chars();
    EXPECT_EQ(chars['A'], "A");
    EXPECT_EQ(chars[' '], "\xC4\xA0");   // Ġ = U+0120
    EXPECT_EQ(chars['\n'], "\xC4\x8A");  // Ċ = U+010A
    EXPECT_EQ(chars[0], "\xC4\x80");     // U+0100
    EXPECT_EQ(chars[0xAD], "\xC5\x83");  // soft hyphen is not printable: U+0143, the last
    std::string all;
    for (int b = 0; b < 256; ++b)
        all += chars[b];
    std::string bytes;
    for (int b = 0; b < 256; ++b)
        bytes += static_cast<char>(b);
    EXPECT_EQ(byte_level_decode(all), bytes);
    EXPECT_EQ(byte_level_decode("<|endoftext|>"), "<|endoftext|>");
}

// 256 byte tokens in plain byte order, then merges.
Vocab tiny_bpe(const std::vector<std::string>& merges) {
    Vocab v;
    v.model = VocabModel::BPE;
    v.pre = "gpt-2";
    for (int b = 0; b < 256; ++b)
        v.tokens.push_back(byte_level_chars()[b]);
    for (const std::string& m : merges) {
        size_t sp = m.find(' ');
        v.tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
        v.merges.push_back(m);
    }
    return v;
}

TEST(Bpe, MergesByRank) {
    // "b c" has the better rank, so "abc" is a + bc even though "a b" is further left.
    Tokenizer t1(tiny_bpe({"b c", "a b"}));
    EXPECT_EQ(t1.encode("abc"), (Ids{'a', 256}));
    Tokenizer t2(tiny_bpe({"a b", "b c"}));
    EXPECT_EQ(t2.encode("abc"), (Ids{256, 'c'}));
    // Equal pairs: leftmost first.
    Tokenizer t3(tiny_bpe({"a a"}));
    EXPECT_EQ(t3.encode("aaa"), (Ids{256, 'a'}));
    // Merges chain across ranks; "Ġ" stands for the space.
    Tokenizer t4(tiny_bpe({"Ġ a", "Ġa b", "c d"}));
    EXPECT_EQ(t4.encode(" ab cd"), (Ids{257, ' ', 258}));
    EXPECT_EQ(t4.decode(t4.encode(" ab cd")), " ab cd");
}

TEST(Bpe, EveryByteHasAToken) {
    Tokenizer t(tiny_bpe({}));
    const std::string bytes("\xFF\x00\n", 3);
    EXPECT_EQ(t.encode(bytes), (Ids{0xFF, 0x00, 0x0A}));
    EXPECT_EQ(t.decode(t.encode(bytes)), bytes);
}

TEST(Bpe, Gpt2RandomBytesDecodeBackAndStreamValidUtf8) {
    const Tokenizer t(test::gpt2_vocab("llama-bpe", false));
    std::mt19937 rng(11);
    for (int i = 0; i < 1000; ++i) {
        std::string s(rng() % 64, '\0');
        for (char& c : s)
            c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : 'a' + rng() % 26);
        const Ids ids = t.encode(s, true, true);
        ASSERT_EQ(t.decode(ids), s);
        Detokenizer d(t);
        for (TokenId id : ids)
            ASSERT_TRUE(utf8_is_valid(d.push(id)));
        ASSERT_TRUE(utf8_is_valid(d.flush()));
    }
}

TEST(Bpe, Gpt2EndOfText) {
    const Tokenizer t(test::gpt2_vocab("gpt-2", false));
    EXPECT_EQ(t.encode("a<|endoftext|>", true, true), (Ids{64, 50256}));
    // Not parsed: plain text, as Hugging Face splits it.
    EXPECT_EQ(t.encode("<|endoftext|>", true, false), (Ids{27, 91, 437, 1659, 5239, 91, 29}));
    EXPECT_EQ(t.eog_ids(), (Ids{50256}));
    EXPECT_EQ(t.eot(), 50256);
    EXPECT_EQ(t.token_to_piece(50256), "");
    EXPECT_EQ(t.token_to_piece(50256, true), "<|endoftext|>");
    EXPECT_EQ(t.token_to_piece(220), " ");  // "Ġ"
}

// 1 MB of corpus text through GPT-2 under the llama3 regex: under 2 s (not timed under the
// sanitizers), and back unchanged.
TEST(Bpe, Gpt2EncodesOneMegabyte) {
    const Tokenizer t(test::gpt2_vocab("llama-bpe", true));
    const std::string corpus = test::read_file(test::data_path("corpus.txt"));
    std::string text;
    while (text.size() < (1u << 20))
        text += corpus;
    text.resize(1u << 20);
    text.resize(text.size() - utf8_incomplete_tail(text));
    const auto t0 = std::chrono::steady_clock::now();
    const Ids ids = t.encode(text, false, true);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "[ timing   ] GPT-2 llama-bpe, 1 MB: " << ids.size() << " tokens in " << s * 1e3
              << " ms\n";
#if !defined(__SANITIZE_ADDRESS__)
    EXPECT_LT(s, 10.0);  // against quadratic merging (minutes), not a speed claim: 0.34 s here
#endif
    EXPECT_TRUE(t.decode(ids, true) == text) << "1 MB text does not decode back";
}

}  // namespace
}  // namespace strata
