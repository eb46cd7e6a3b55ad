// Vocab: validation of hand-made vocabularies, and reading tokenizer.ggml.* from GGUF files
// written with GgufWriter (values, defaults, and the errors for bad or unsupported files).
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "tokenizer_test_util.h"

namespace strata {
namespace {

template <typename E>
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    return "<no error>";
}

TEST(Vocab, ValidateAcceptsSmallVocab) {
    EXPECT_NO_THROW(test::small_spm({{"a", -1}}).validate());
}

TEST(Vocab, ValidateRejectsMismatchedArrays) {
    Vocab v = test::small_spm({{"a", -1}});
    v.scores.pop_back();
    EXPECT_NE(error_of<FormatError>([&] { v.validate(); }).find("scores"), std::string::npos);
    v = test::small_spm({{"a", -1}});
    v.types.push_back(TokenType::NORMAL);
    EXPECT_NE(error_of<FormatError>([&] { v.validate(); }).find("token types"), std::string::npos);
    v = test::small_spm({});
    v.tokens.clear();
    v.scores.clear();
    v.types.clear();
    EXPECT_THROW(v.validate(), FormatError);
}

TEST(Vocab, ValidateRejectsIdsOutOfRange) {
    Vocab v = test::small_spm({{"a", -1}});
    v.eos = v.n_tokens();
    const std::string what = error_of<FormatError>([&] { v.validate(); });
    EXPECT_NE(what.find("eos token id 260"), std::string::npos) << what;
    v = test::small_spm({{"a", -1}});
    v.bos = -7;
    EXPECT_THROW(v.validate(), FormatError);
    v = test::small_spm({{"a", -1}});
    v.types[5] = static_cast<TokenType>(9);
    EXPECT_THROW(v.validate(), FormatError);
    // The Tokenizer validates too.
    v = test::small_spm({{"a", -1}});
    v.unk = 100000;
    EXPECT_THROW(Tokenizer{v}, FormatError);
}

TEST(Vocab, ReadsEverythingFromGguf) {
    Vocab want = test::small_spm({{"\xE2\x96\x81"
                                   "a",
                                   -1},
                                  {"b", -2}},
                                 {{"<ctl>", TokenType::CONTROL}});
    want.pad = 0;
    want.eot = want.n_tokens() - 1;
    want.add_eos = true;
    want.add_space_prefix = true;
    test::TempDir dir;
    test::write_vocab_gguf(dir.file("v.gguf"), want);
    const Vocab got = Vocab::from_file(ModelFile(dir.file("v.gguf")));
    EXPECT_EQ(got.model, VocabModel::SPM);
    EXPECT_EQ(got.tokens, want.tokens);
    EXPECT_EQ(got.scores, want.scores);
    EXPECT_EQ(got.types, want.types);
    EXPECT_EQ(got.bos, 1);
    EXPECT_EQ(got.eos, 2);
    EXPECT_EQ(got.unk, 0);
    EXPECT_EQ(got.pad, 0);
    EXPECT_EQ(got.eot, want.eot);
    EXPECT_TRUE(got.add_bos);
    EXPECT_TRUE(got.add_eos);
    EXPECT_TRUE(got.add_space_prefix);
}

// A bare file: only the model and the tokens.
std::string write_bare(const test::TempDir& dir, const std::string& model,
                       const std::vector<std::string>& tokens,
                       const std::function<void(GgufWriter&)>& more = nullptr) {
    const std::string path = dir.file("bare.gguf");
    GgufWriter w(path);
    w.set("general.architecture", GgufValue::string("test"));
    if (!model.empty()) w.set("tokenizer.ggml.model", GgufValue::string(model));
    if (!tokens.empty()) w.set("tokenizer.ggml.tokens", GgufValue::strings(tokens));
    if (more) more(w);
    w.write_header();
    w.finish();
    return path;
}

TEST(Vocab, DefaultsPerModel) {
    test::TempDir dir;
    Vocab spm =
        Vocab::from_file(ModelFile(write_bare(dir, "llama", {"<unk>", "<s>", "</s>", "a"})));
    EXPECT_EQ(spm.bos, 1);
    EXPECT_EQ(spm.eos, 2);
    EXPECT_EQ(spm.unk, 0);
    EXPECT_TRUE(spm.add_bos);
    EXPECT_TRUE(spm.add_space_prefix);
    EXPECT_EQ(spm.pre, "default");
    // Defaults that do not fit a tiny vocabulary are dropped, not errors.
    Vocab tiny = Vocab::from_file(ModelFile(write_bare(dir, "llama", {"a"})));
    EXPECT_EQ(tiny.bos, kNoToken);
    EXPECT_EQ(tiny.unk, 0);

    Vocab bpe = Vocab::from_file(ModelFile(write_bare(dir, "gpt2", {"a", "b"})));
    EXPECT_EQ(bpe.model, VocabModel::BPE);
    EXPECT_EQ(bpe.bos, kNoToken);
    EXPECT_FALSE(bpe.add_bos);
    EXPECT_FALSE(bpe.add_space_prefix);
    Vocab llama3 =
        Vocab::from_file(ModelFile(write_bare(dir, "gpt2", {"a", "b"}, [](GgufWriter& w) {
            w.set("tokenizer.ggml.pre", GgufValue::string("llama-bpe"));
        })));
    EXPECT_TRUE(llama3.add_bos);
}

TEST(Vocab, FileErrorsNameTheProblem) {
    test::TempDir dir;
    std::string what = error_of<UnsupportedError>(
        [&] { Vocab::from_file(ModelFile(write_bare(dir, "bert", {"a"}))); });
    EXPECT_NE(what.find("'bert'"), std::string::npos) << what;
    EXPECT_THROW(Vocab::from_file(ModelFile(write_bare(dir, "", {"a"}))), FormatError);
    EXPECT_THROW(Vocab::from_file(ModelFile(write_bare(dir, "llama", {}))), FormatError);
    what = error_of<FormatError>([&] {
        Vocab::from_file(ModelFile(write_bare(dir, "llama", {"a", "b"}, [](GgufWriter& w) {
            w.set("tokenizer.ggml.scores", GgufValue::f32s({0.5f}));
        })));
    });
    EXPECT_NE(what.find("2 tokens but 1 scores"), std::string::npos) << what;
    what = error_of<FormatError>([&] {
        Vocab::from_file(ModelFile(write_bare(dir, "llama", {"a", "b"}, [](GgufWriter& w) {
            w.set("tokenizer.ggml.token_type", GgufValue::i32s({1, 1, 1}));
        })));
    });
    EXPECT_NE(what.find("token types"), std::string::npos) << what;
    what = error_of<FormatError>([&] {
        Vocab::from_file(ModelFile(write_bare(dir, "llama", {"a", "b"}, [](GgufWriter& w) {
            w.set("tokenizer.ggml.eos_token_id", GgufValue::u32(5));
        })));
    });
    EXPECT_NE(what.find("eos token id 5"), std::string::npos) << what;
    EXPECT_THROW(
        Vocab::from_file(ModelFile(write_bare(
            dir, "llama", {"a"},
            [](GgufWriter& w) { w.set("tokenizer.ggml.token_type", GgufValue::i32s({7})); }))),
        FormatError);
    // Wrong value types are reported by the GGUF layer, also as FormatError.
    EXPECT_THROW(
        Vocab::from_file(ModelFile(write_bare(
            dir, "llama", {"a"},
            [](GgufWriter& w) { w.set("tokenizer.ggml.scores", GgufValue::string("x")); }))),
        FormatError);
}

TEST(Vocab, TokenizerRejectsUnknownPreTokenizerByName) {
    test::TempDir dir;
    const std::string path = write_bare(dir, "gpt2", {"a", "b", "ab"}, [](GgufWriter& w) {
        w.set("tokenizer.ggml.pre", GgufValue::string("no-such-pre"));
        w.set("tokenizer.ggml.merges", GgufValue::strings({"a b"}));
    });
    const std::string what =
        error_of<UnsupportedError>([&] { Tokenizer::from_file(ModelFile(path)); });
    EXPECT_NE(what.find("'no-such-pre'"), std::string::npos) << what;
    EXPECT_NE(what.find("llama-bpe"), std::string::npos) << what;  // lists the supported ones
}

TEST(Vocab, TokenizerRejectsBadMerges) {
    Vocab v;
    v.model = VocabModel::BPE;
    v.pre = "gpt-2";
    v.tokens = {"a", "b", "ab"};
    v.merges = {"a c"};
    std::string what = error_of<FormatError>([&] { Tokenizer{v}; });
    EXPECT_NE(what.find("merge 0 'a c'"), std::string::npos) << what;
    v.merges = {"ab"};
    EXPECT_THROW(Tokenizer{v}, FormatError);
}

}  // namespace
}  // namespace strata
