// Synthetic vocabularies have the exact size, unique tokens, the family's special tokens at
// the family's ids, all 256 byte tokens, and (BPE) merges whose parts precede their result.
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/synth/synth_vocab.h"

namespace strata {
namespace {

struct VocabCase {
    VocabStyle style;
    int64_t n_vocab;
    const char* bos;
    const char* eos;
};

class Vocab : public ::testing::TestWithParam<VocabCase> {};

TEST_P(Vocab, IsCompleteAndConsistent) {
    const VocabCase& vc = GetParam();
    SynthVocab v = make_synth_vocab(vc.style, vc.n_vocab);
    ASSERT_EQ(static_cast<int64_t>(v.tokens.size()), vc.n_vocab);
    ASSERT_EQ(v.token_types.size(), v.tokens.size());

    std::unordered_map<std::string, size_t> index;
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        EXPECT_TRUE(index.emplace(v.tokens[i], i).second) << "duplicate token " << v.tokens[i];
    }
    EXPECT_EQ(v.tokens.at(v.special.bos), vc.bos);
    EXPECT_EQ(v.tokens.at(v.special.eos), vc.eos);

    if (v.model == "llama") {  // SPM: scores, <0xXX> byte tokens of type BYTE
        ASSERT_EQ(v.scores.size(), v.tokens.size());
        EXPECT_TRUE(v.merges.empty());
        for (int b : {0x00, 0x0A, 0x41, 0xFF}) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            ASSERT_TRUE(index.count(name)) << name;
            EXPECT_EQ(v.token_types[index[name]], kTokenByte);
        }
        EXPECT_TRUE(index.count("\xE2\x96\x81"));  // "▁"
    } else {                                       // BPE: every merge "a b" has a and b before a+b
        EXPECT_EQ(v.model, "gpt2");
        EXPECT_TRUE(v.scores.empty());
        ASSERT_FALSE(v.merges.empty());
        for (const std::string& m : v.merges) {
            size_t space = m.find(' ', 1);
            ASSERT_NE(space, std::string::npos) << m;
            std::string a = m.substr(0, space), b = m.substr(space + 1);
            ASSERT_TRUE(index.count(a) && index.count(b) && index.count(a + b)) << m;
            EXPECT_LT(index[a], index[a + b]);
            EXPECT_LT(index[b], index[a + b]);
        }
        EXPECT_TRUE(index.count("\xC4\xA0"));  // "Ġ", GPT-2's byte for space
    }
}

INSTANTIATE_TEST_SUITE_P(
    Styles, Vocab,
    ::testing::Values(VocabCase{VocabStyle::Llama2Spm, 32000, "<s>", "</s>"},
                      VocabCase{VocabStyle::Llama2Spm, 512, "<s>", "</s>"},
                      VocabCase{VocabStyle::Gemma3Spm, 262144, "<bos>", "<eos>"},
                      VocabCase{VocabStyle::Gemma3Spm, 512, "<bos>", "<eos>"},
                      VocabCase{VocabStyle::Llama3Bpe, 128256, "<|begin_of_text|>", "<|eot_id|>"},
                      VocabCase{VocabStyle::Llama3Bpe, 1024, "<|begin_of_text|>", "<|eot_id|>"},
                      VocabCase{VocabStyle::Qwen2Bpe, 152064, "<|endoftext|>", "<|im_end|>"},
                      VocabCase{VocabStyle::Qwen3Bpe, 151936, "<|endoftext|>", "<|im_end|>"},
                      VocabCase{VocabStyle::Qwen3Bpe, 512, "<|endoftext|>", "<|im_end|>"}));

TEST(Vocab, RealLayouts) {
    SynthVocab llama3 = make_synth_vocab(VocabStyle::Llama3Bpe, 128256);
    EXPECT_EQ(llama3.special.bos, 128000);
    EXPECT_EQ(llama3.tokens[128006], "<|start_header_id|>");
    EXPECT_EQ(llama3.merges.size(), 128000u - 256u);
    SynthVocab qwen2 = make_synth_vocab(VocabStyle::Qwen2Bpe, 152064);
    EXPECT_EQ(qwen2.special.eos, 151645);
    EXPECT_EQ(qwen2.tokens[152063], "[PAD152063]");
    EXPECT_EQ(qwen2.token_types[152063], kTokenUnused);
    SynthVocab gemma = make_synth_vocab(VocabStyle::Gemma3Spm, 1024);
    EXPECT_EQ(gemma.tokens[106], "<end_of_turn>");
    EXPECT_EQ(gemma.tokens[107], "<0x00>");
    EXPECT_FALSE(gemma.chat_template.empty());
}

TEST(Vocab, Deterministic) {
    SynthVocab a = make_synth_vocab(VocabStyle::Qwen2Bpe, 4096);
    SynthVocab b = make_synth_vocab(VocabStyle::Qwen2Bpe, 4096);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.merges, b.merges);
}

TEST(Vocab, TooSmall) {
    EXPECT_THROW(make_synth_vocab(VocabStyle::Llama2Spm, 100), ArgumentError);
}

}  // namespace
}  // namespace strata
