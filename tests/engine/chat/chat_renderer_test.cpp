// Choosing and using a chat template: the file's template, the --chat-template /
// --chat-template-file overrides, and the fallback (with one warning naming the
// error) when a Jinja template fails to render. Jinja rendering itself is checked against
// Python jinja2 by jinja/jinja_oracle.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/chat/chat_renderer.h"
#include "engine/chat/jinja/jinja_value.h"
#include "engine/core/error.h"
#include "engine/core/safe_write.h"
#include "engine/runtime/model.h"
#include "tests/engine/chat/tiny_model.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

const std::vector<ChatMessage> kChat = {{"system", "Be brief."}, {"user", "Hi there"}};

class ChatRendererTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch_ = new testing::ScratchFile("chat_renderer_tiny_gemma3.gguf");
        testing::write_tiny_gemma3(scratch_->path());
        model_ = new Model(scratch_->path());
    }
    static void TearDownTestSuite() {
        delete model_;
        delete scratch_;
    }
    static testing::ScratchFile* scratch_;
    static Model* model_;
};
testing::ScratchFile* ChatRendererTest::scratch_ = nullptr;
Model* ChatRendererTest::model_ = nullptr;

// The synthetic model carries a Gemma-style Jinja template (engine/synth/synth_vocab.cpp); a
// model without one is covered by tests/tools/chat_template_cli_test.py on the default model.
TEST_F(ChatRendererTest, TheFilesTemplateIsUsedWhenItRenders) {
    const ChatRendererChoice c = choose_chat_renderer(*model_, {});
    EXPECT_TRUE(c.renderer.is_jinja());
    EXPECT_TRUE(c.warnings.empty());
    EXPECT_EQ(c.renderer.fallback(), ChatFormat::Gemma);
    const std::vector<ChatMessage> user = {{"user", " Hi "}};
    EXPECT_EQ(c.renderer.render(user, true), "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
}

TEST_F(ChatRendererTest, OverridesByNameTextAndFile) {
    const ChatRendererChoice named = choose_chat_renderer(*model_, {"chatml", ""});
    EXPECT_TRUE(named.warnings.empty());
    EXPECT_EQ(named.renderer.render(kChat, true), render_chat(ChatFormat::ChatML, kChat, true));

    const ChatRendererChoice text = choose_chat_renderer(
        *model_, {"{% for m in messages %}[{{ m.role }}|{{ m.content }}]{% endfor %}{{ bos_token }}", ""});
    ASSERT_TRUE(text.renderer.is_jinja());
    EXPECT_EQ(text.renderer.render(kChat, false), "[system|Be brief.][user|Hi there]<bos>");

    testing::ScratchFile file("chat_renderer_template.jinja");
    write_file_atomic(file.path(), "{{ messages[-1].content|upper }}{% if add_generation_prompt %}>{% endif %}", "test template");
    const ChatRendererChoice from_file = choose_chat_renderer(*model_, {"", file.path()});
    EXPECT_EQ(from_file.renderer.render(kChat, true), "HI THERE>");
    EXPECT_EQ(choose_chat_renderer(*model_, {file.path(), ""}).renderer.render(kChat, false), "HI THERE");
}

TEST_F(ChatRendererTest, BadOverridesAreErrorsNamingTheFlag) {
    try {
        choose_chat_renderer(*model_, {"no-such-format", ""});
        FAIL() << "no error";
    } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("--chat-template 'no-such-format'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("chatml"), std::string::npos) << e.what();
    }
    testing::ScratchFile file("chat_renderer_broken.jinja");
    write_file_atomic(file.path(), "ok\n{% for m in messages %}", "test template");
    try {
        choose_chat_renderer(*model_, {"", file.path()});
        FAIL() << "no error";
    } catch (const ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("--chat-template-file"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("endfor"), std::string::npos) << e.what();
    }
    EXPECT_THROW(choose_chat_renderer(*model_, {"", file.path() + ".missing"}), SystemError);
}

TEST(ChatRenderer, FailedRenderFallsBackWithOneWarningNamingTheError) {
    ChatRenderer r = ChatRenderer::from_jinja(
        "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}x",
        {"the test template", "<s>", "</s>", ChatFormat::Llama3});
    std::vector<std::string> warnings;
    r.set_warning_sink([&](const std::string& w) { warnings.push_back(w); });
    EXPECT_EQ(r.render(kChat, true), render_chat(ChatFormat::Llama3, kChat, true));
    EXPECT_EQ(r.render(kChat, true), render_chat(ChatFormat::Llama3, kChat, true));
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("the test template"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("System role not supported"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("llama3"), std::string::npos) << warnings[0];
    EXPECT_THROW(r.render_strict(kChat, true), jinja::TemplateError);
    const std::vector<ChatMessage> user_only = {{"user", "Hi"}};
    EXPECT_EQ(r.render(user_only, true), "x");
}

}  // namespace
}  // namespace strata
