// Byte-level BPE against Hugging Face: GPT-2's vocabulary written to a GGUF file (GgufWriter),
// read back through ModelFile, and run on every corpus case under the gpt-2, llama-bpe and
// qwen2 pre-tokenizers; ids must equal those in expected_gpt2.jsonl (make_fixtures.py).
#include <gtest/gtest.h>

#include <iostream>

#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tokenizer_test_util.h"

namespace strata {
namespace {

const test::Fixture& fixture() {
    static const test::Fixture f = test::load_fixture("expected_gpt2.jsonl");
    return f;
}

// GPT-2 under `pre`, through a GGUF file.
Tokenizer gpt2_tokenizer(const std::string& pre) {
    bool add_bos = fixture().header.at("add_bos").at(pre).get<bool>();
    test::TempDir dir;
    const std::string path = dir.file("gpt2-" + pre + ".gguf");
    test::write_vocab_gguf(path, test::gpt2_vocab(pre, add_bos));
    ModelFile file(path);
    return Tokenizer::from_file(file);
}

class Gpt2Oracle : public ::testing::TestWithParam<std::string> {};

TEST_P(Gpt2Oracle, IdsMatchHuggingFaceOnEveryCase) {
    const std::string pre = GetParam();
    const test::Fixture& f = fixture();
    const Tokenizer tok = gpt2_tokenizer(pre);
    ASSERT_EQ(tok.n_tokens(), 50257);
    const bool add_bos = f.header.at("add_bos").at(pre).get<bool>();

    size_t same_special = 0, same_plain = 0, shown = 0;
    for (size_t i = 0; i < f.cases.size(); ++i) {
        const nlohmann::json& row = f.rows[i];
        std::vector<TokenId> want = test::ids_of(row.contains(pre) ? row[pre] : row["gpt-2"]);
        std::vector<TokenId> want_plain =
            row.contains(pre + ":plain") ? test::ids_of(row[pre + ":plain"]) : want;
        if (add_bos) {
            want.insert(want.begin(), tok.bos());
            want_plain.insert(want_plain.begin(), tok.bos());
        }
        const std::vector<TokenId> got = tok.encode(f.cases[i], true, true);
        const std::vector<TokenId> got_plain = tok.encode(f.cases[i], true, false);
        same_special += got == want;
        same_plain += got_plain == want_plain;
        if ((got != want || got_plain != want_plain) && shown++ < 5) {
            ADD_FAILURE() << pre << " case " << i << ": " << nlohmann::json(f.cases[i]).dump()
                          << "\n  want " << test::show(tok, got == want ? want_plain : want)
                          << "\n  got  " << test::show(tok, got == want ? got_plain : got);
        }
    }
    std::cout << "[ oracle   ] " << pre << ": parse_special=true identical " << same_special
              << " / " << f.cases.size() << ", parse_special=false identical " << same_plain
              << " / " << f.cases.size() << "\n";
    EXPECT_EQ(same_special, f.cases.size());
    EXPECT_EQ(same_plain, f.cases.size());
}

// Byte-level BPE is lossless: decoding gives back every byte, and the streaming detokenizer
// yields valid UTF-8 at every step and the same text in the end.
TEST_P(Gpt2Oracle, DecodeAndStreamingGiveTheTextBack) {
    const Tokenizer tok = gpt2_tokenizer(GetParam());
    for (const std::string& text : fixture().cases) {
        const std::vector<TokenId> ids = tok.encode(text, false, false);
        ASSERT_EQ(tok.decode(ids), text);
        Detokenizer detok(tok);
        std::string streamed;
        for (TokenId id : ids) {
            std::string part = detok.push(id);
            ASSERT_TRUE(utf8_is_valid(part)) << nlohmann::json(text).dump();
            streamed += part;
        }
        streamed += detok.flush();
        ASSERT_EQ(streamed, text);
    }
}

INSTANTIATE_TEST_SUITE_P(Pre, Gpt2Oracle, ::testing::Values("gpt-2", "llama-bpe", "qwen2"),
                         [](const auto& info) {
                             std::string name = info.param;
                             for (char& c : name) {
                                 if (c == '-') c = '_';
                             }
                             return name;
                         });

}  // namespace
}  // namespace strata
