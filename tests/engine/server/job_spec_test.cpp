// From a parsed request to a JobSpec with the tiny Gemma 3's tokenizer: the chat prompt is the
// documented Gemma rendering tokenized once (one BOS), and the context checks name both numbers.
#include <gtest/gtest.h>

#include <string>

#include "engine/runtime/model.h"
#include "engine/server/api_error.h"
#include "engine/server/job_spec.h"
#include "tests/engine/chat/tiny_model.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata::server {
namespace {

class JobSpecTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch_ = new testing::ScratchFile("server_spec_tiny_gemma3.gguf");
        testing::write_tiny_gemma3(scratch_->path());
        model_ = new Model(scratch_->path());
    }
    static void TearDownTestSuite() {
        delete model_;
        delete scratch_;
    }

    static PromptContext context(int64_t n_ctx, int64_t cap = 0) {
        return PromptContext{&model_->tokenizer(), ChatFormat::Gemma, 512, n_ctx, cap};
    }
    static CompletionRequest parse(Endpoint e, const std::string& body) {
        return parse_request(e, body, SamplerParams{});
    }
    static ApiError refusal(const CompletionRequest& r, const PromptContext& c) {
        try {
            make_job_spec(r, c);
        } catch (const ApiError& e) {
            return e;
        }
        return ApiError(0, "accepted");
    }

    static inline testing::ScratchFile* scratch_ = nullptr;
    static inline Model* model_ = nullptr;
};

TEST_F(JobSpecTest, ChatPromptIsTheGemmaRendering) {
    const JobSpec spec = make_job_spec(
        parse(Endpoint::Chat, R"({"messages": [{"role": "system", "content": "Be brief."},
                                               {"role": "user", "content": "Hello"}]})"),
        context(256));
    const std::string text = "<start_of_turn>user\nBe brief.\n\nHello<end_of_turn>\n<start_of_turn>model\n";
    EXPECT_EQ(spec.prompt, model_->tokenizer().encode(text, true, true));
    EXPECT_EQ(spec.max_tokens, 256 - static_cast<int64_t>(spec.prompt.size()));
}

TEST_F(JobSpecTest, CompletionPromptAndCap) {
    const JobSpec spec = make_job_spec(parse(Endpoint::Completion, R"({"prompt": "one two <start_of_turn>"})"),
                                       context(256, 10));
    // Completion text is plain: control-token spellings stay text.
    EXPECT_EQ(spec.prompt, model_->tokenizer().encode("one two <start_of_turn>", true, false));
    EXPECT_EQ(spec.max_tokens, 10);  // the server's cap
    EXPECT_EQ(make_job_spec(parse(Endpoint::Completion, R"({"prompt": "x", "max_tokens": 50})"), context(256, 10))
                  .max_tokens, 10);
    EXPECT_EQ(make_job_spec(parse(Endpoint::Completion, R"({"prompt": [2, 7, 9], "max_tokens": 5})"), context(256))
                  .prompt, (std::vector<TokenId>{2, 7, 9}));
}

TEST_F(JobSpecTest, ContextChecksNameBothNumbers) {
    std::string words;
    for (int i = 0; i < 80; ++i) words += "word ";
    const CompletionRequest long_prompt = parse(Endpoint::Completion, "{\"prompt\": \"" + words + "\"}");
    const int64_t n = static_cast<int64_t>(model_->tokenizer().encode(words, true).size());
    ASSERT_GT(n, 64);
    const ApiError e = refusal(long_prompt, context(64));
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "context_length_exceeded");
    EXPECT_NE(std::string(e.what()).find(std::to_string(n)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("64"), std::string::npos) << e.what();

    const CompletionRequest too_many = parse(Endpoint::Completion, R"({"prompt": "hi", "max_tokens": 100})");
    const ApiError m = refusal(too_many, context(64));
    EXPECT_EQ(m.param(), "max_tokens");
    EXPECT_NE(std::string(m.what()).find("100"), std::string::npos) << m.what();
    EXPECT_EQ(refusal(too_many, context(256)).status(), 0);
}

TEST_F(JobSpecTest, IdsOutsideTheVocabulary) {
    EXPECT_EQ(refusal(parse(Endpoint::Completion, R"({"prompt": [2, 512]})"), context(256)).param(), "prompt[1]");
    EXPECT_EQ(refusal(parse(Endpoint::Completion, R"({"prompt": "x", "logit_bias": {"600": 1}})"), context(256))
                  .param(), "logit_bias.600");
}

}  // namespace
}  // namespace strata::server
