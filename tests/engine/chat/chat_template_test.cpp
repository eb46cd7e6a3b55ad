// Chat formats against renderings written by hand from docs/FORMATS.md §4.7 and the models'
// published formats, and the choice of a format from template text and architecture.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/core/error.h"

namespace strata {
namespace {

const std::vector<ChatMessage> kThree = {
    {"system", "You are terse."},
    {"user", "Hi there"},
    {"assistant", "Hello!"},
};

std::vector<ChatMessage> four() {
    std::vector<ChatMessage> m = kThree;
    m.push_back({"user", "Name a colour."});
    return m;
}

TEST(ChatTemplate, Gemma) {
    EXPECT_EQ(render_chat(ChatFormat::Gemma, kThree, true),
              "<bos><start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n"
              "<start_of_turn>model\nHello!<end_of_turn>\n"
              "<start_of_turn>model\n");
    // The system text goes only into the first user turn; content is trimmed.
    std::vector<ChatMessage> m = four();
    m[1].content = "  Hi there \n";
    EXPECT_EQ(render_chat(ChatFormat::Gemma, m, false),
              "<bos><start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n"
              "<start_of_turn>model\nHello!<end_of_turn>\n"
              "<start_of_turn>user\nName a colour.<end_of_turn>\n");
}

TEST(ChatTemplate, Llama3) {
    EXPECT_EQ(render_chat(ChatFormat::Llama3, kThree, true),
              "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
              "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplate, ChatML) {
    EXPECT_EQ(render_chat(ChatFormat::ChatML, kThree, true),
              "<|im_start|>system\nYou are terse.<|im_end|>\n"
              "<|im_start|>user\nHi there<|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n"
              "<|im_start|>assistant\n");
    EXPECT_EQ(render_chat(ChatFormat::ChatML, kThree, false),
              "<|im_start|>system\nYou are terse.<|im_end|>\n"
              "<|im_start|>user\nHi there<|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n");
}

TEST(ChatTemplate, Llama2) {
    EXPECT_EQ(render_chat(ChatFormat::Llama2, four(), true),
              "<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi there [/INST] Hello! </s>"
              "<s>[INST] Name a colour. [/INST]");
}

TEST(ChatTemplate, Mistral) {
    EXPECT_EQ(render_chat(ChatFormat::Mistral, four(), true),
              "<s>[INST] You are terse.\n\nHi there [/INST] Hello!</s>[INST] Name a colour. [/INST]");
}

TEST(ChatTemplate, Phi3) {
    EXPECT_EQ(render_chat(ChatFormat::Phi3, kThree, true),
              "<|system|>\nYou are terse.<|end|>\n"
              "<|user|>\nHi there<|end|>\n"
              "<|assistant|>\nHello!<|end|>\n"
              "<|assistant|>\n");
}

TEST(ChatTemplate, UnknownRoleThrows) {
    std::vector<ChatMessage> m = {{"tool", "x"}};
    for (std::string_view name : chat_format_names()) {
        EXPECT_THROW(render_chat(chat_format_from_name(name), m, true), ArgumentError) << name;
    }
}

TEST(ChatTemplate, NamesRoundTripAndUnknownListsNames) {
    ASSERT_EQ(chat_format_names().size(), 6u);
    for (std::string_view name : chat_format_names()) {
        EXPECT_EQ(chat_format_name(chat_format_from_name(name)), name);
    }
    try {
        chat_format_from_name("vicuna");
        FAIL() << "no exception";
    } catch (const ArgumentError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("vicuna"), std::string::npos) << what;
        EXPECT_NE(what.find("gemma"), std::string::npos) << what;
        EXPECT_NE(what.find("phi3"), std::string::npos) << what;
    }
}

TEST(ChatTemplate, DetectByTemplateText) {
    EXPECT_EQ(detect_chat_format("{{ '<start_of_turn>' + role }}"), ChatFormat::Gemma);
    EXPECT_EQ(detect_chat_format("{{ '<|start_header_id|>' + m.role }}"), ChatFormat::Llama3);
    EXPECT_EQ(detect_chat_format("{{'<|im_start|>' + message.role}}"), ChatFormat::ChatML);
    EXPECT_EQ(detect_chat_format("[INST] <<SYS>>\\n{{ system }}"), ChatFormat::Llama2);
    EXPECT_EQ(detect_chat_format("{{ '[INST] ' + content + ' [/INST]' }}"), ChatFormat::Mistral);
    EXPECT_EQ(detect_chat_format("{{'<|user|>\\n' + c + '<|end|>'}}"), ChatFormat::Phi3);
    EXPECT_FALSE(detect_chat_format("{{ messages }}").has_value());
    EXPECT_FALSE(detect_chat_format("").has_value());
}

TEST(ChatTemplate, ChooseByArchitectureThenChatML) {
    EXPECT_EQ(choose_chat_format("", "gemma3"), ChatFormat::Gemma);
    EXPECT_EQ(choose_chat_format("", "qwen2"), ChatFormat::ChatML);
    EXPECT_EQ(choose_chat_format("", "qwen3"), ChatFormat::ChatML);
    EXPECT_EQ(choose_chat_format("", "phi3"), ChatFormat::Phi3);
    EXPECT_EQ(choose_chat_format("", "llama"), ChatFormat::ChatML);
    // The template text wins over the architecture.
    EXPECT_EQ(choose_chat_format("<|start_header_id|>", "gemma3"), ChatFormat::Llama3);
}

TEST(ChatTemplate, StripBosText) {
    EXPECT_EQ(strip_bos_text("<bos><start_of_turn>", "<bos>"), "<start_of_turn>");
    EXPECT_EQ(strip_bos_text("<start_of_turn>", "<bos>"), "<start_of_turn>");
    EXPECT_EQ(strip_bos_text("<bos>x", ""), "<bos>x");
}

}  // namespace
}  // namespace strata
