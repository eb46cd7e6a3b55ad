// Conversations on a tiny synthetic Gemma 3: one BOS, a second turn feeds only its new tokens
// (KV prefix reuse), the context check, the JSON save/load round trip, and a long chat over
// sliding-window KV rings (prefix reuse and context shift across the window) that says what the
// same chat over full caches says.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/chat/conversation.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "kernels_cpu/cpu_backend.h"
#include "tests/engine/chat/tiny_model.h"
#include "tests/engine/synth/scratch_file.h"

namespace strata {
namespace {

class ConversationTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch_ = new testing::ScratchFile("chat_tiny_gemma3.gguf");
        testing::write_tiny_gemma3(scratch_->path());
        model_ = new Model(scratch_->path());
    }
    static void TearDownTestSuite() {
        delete model_;
        delete scratch_;
    }

    Session make_session(int64_t n_ctx = 512) {
        SessionParams p;
        p.n_ctx = n_ctx;
        return Session(*model_, backend_, p);
    }

    static GenerateParams greedy(int64_t n_predict) {
        GenerateParams g;
        g.n_predict = n_predict;
        g.sampler.temperature = 0;
        return g;
    }

    // The tokens of `messages` as the documented Gemma format, tokenized independently.
    static std::vector<TokenId> expected_tokens(const std::vector<ChatMessage>& messages) {
        std::string text = render_chat(ChatFormat::Gemma, messages, true);
        EXPECT_EQ(text.rfind("<bos>", 0), 0u);
        return model_->tokenizer().encode(text.substr(5), true, true);
    }

    static inline testing::ScratchFile* scratch_ = nullptr;
    static inline Model* model_ = nullptr;
    cpu::CpuBackend backend_{1};
};

const auto kIgnore = [](std::string_view) { return true; };

TEST_F(ConversationTest, RenderHasOneBosAndTurnTokens) {
    Session session = make_session();
    Conversation conv(session, ChatFormat::Gemma);
    conv.set_system("Be brief.");
    const Tokenizer& tok = model_->tokenizer();
    ASSERT_NE(tok.find_token("<start_of_turn>"), kNoToken);
    ASSERT_TRUE(tok.vocab().add_bos);
    std::vector<TokenId> t = conv.render_tokens(true);
    ASSERT_GE(t.size(), 3u);
    EXPECT_EQ(t[0], tok.bos());
    EXPECT_EQ(std::count(t.begin(), t.end(), tok.bos()), 1);
    EXPECT_EQ(t[1], tok.find_token("<start_of_turn>"));
}

TEST_F(ConversationTest, SecondTurnFeedsOnlyNewTokens) {
    Session session = make_session();
    Conversation conv(session, ChatFormat::Gemma);
    conv.set_system("Be brief.");

    // -n 0: the answer is empty, so the second prompt extends the first one exactly.
    conv.reply("Hello there", greedy(0), kIgnore);
    const std::vector<TokenId> p1 =
        expected_tokens({{"system", "Be brief."}, {"user", "Hello there"}});
    EXPECT_EQ(conv.last_turn().n_reused, 0);
    EXPECT_EQ(conv.last_turn().n_prompt, static_cast<int64_t>(p1.size()));
    EXPECT_EQ(session.tokens(), p1);

    conv.reply("And again", greedy(0), kIgnore);
    const std::vector<TokenId> p2 = expected_tokens({{"system", "Be brief."},
                                                     {"user", "Hello there"},
                                                     {"assistant", ""},
                                                     {"user", "And again"}});
    ASSERT_GT(p2.size(), p1.size());
    EXPECT_EQ(conv.last_turn().n_reused, static_cast<int64_t>(p1.size()));
    EXPECT_EQ(conv.last_turn().n_prompt, static_cast<int64_t>(p2.size() - p1.size()));
    EXPECT_EQ(session.tokens(), p2);
    ASSERT_EQ(conv.messages().size(), 4u);
    EXPECT_EQ(conv.messages()[1].role, "assistant");
    EXPECT_EQ(conv.messages()[2].content, "And again");
}

TEST_F(ConversationTest, GeneratedAnswerKeepsThePromptKv) {
    Session session = make_session();
    Conversation conv(session, ChatFormat::Gemma);
    const std::string a1 = conv.reply("Tell me something", greedy(6), kIgnore);
    const std::vector<TokenId> p1 = expected_tokens({{"user", "Tell me something"}});
    EXPECT_LE(conv.last_turn().n_generated, 6);
    EXPECT_EQ(conv.messages().back().content, a1);

    conv.reply("More", greedy(6), kIgnore);
    const std::vector<TokenId> p2 = expected_tokens(
        {{"user", "Tell me something"}, {"assistant", a1}, {"user", "More"}});
    // At least the first prompt is reused; everything up to the end of the second is fed.
    EXPECT_GE(conv.last_turn().n_reused, static_cast<int64_t>(p1.size()));
    EXPECT_EQ(conv.last_turn().n_reused + conv.last_turn().n_prompt,
              static_cast<int64_t>(p2.size()));
    ASSERT_GE(session.tokens().size(), p2.size());
    EXPECT_TRUE(std::equal(p2.begin(), p2.end(), session.tokens().begin()));
}

TEST_F(ConversationTest, TooLongForTheContextThrowsAndRecordsNothing) {
    Session session = make_session(64);
    Conversation conv(session, ChatFormat::Gemma);
    std::string long_text;
    for (int i = 0; i < 100; ++i) long_text += "word ";
    EXPECT_THROW(conv.reply(long_text, greedy(4), kIgnore), ArgumentError);
    EXPECT_TRUE(conv.messages().empty());
}

TEST_F(ConversationTest, SaveLoadRoundTrip) {
    Session session = make_session();
    Conversation conv(session, ChatFormat::Gemma);
    conv.set_system("Sys \"quoted\"\nline");
    conv.reply("Héllo", greedy(3), kIgnore);
    const std::string saved = conv.to_json();

    Session other_session = make_session();
    Conversation other(other_session, ChatFormat::ChatML);
    other.from_json(saved);
    EXPECT_EQ(other.renderer().name(), "gemma");
    EXPECT_EQ(other.system(), conv.system());
    ASSERT_EQ(other.messages().size(), 2u);
    EXPECT_EQ(other.messages()[0].content, "Héllo");
    EXPECT_EQ(other.messages()[1].content, conv.messages()[1].content);
    EXPECT_EQ(other.to_json(), saved);
    EXPECT_EQ(other.render_tokens(true), conv.render_tokens(true));

    EXPECT_THROW(other.from_json("not json"), FormatError);
    EXPECT_THROW(other.from_json(R"({"messages": [{"role": "user"}]})"), FormatError);
    EXPECT_THROW(other.from_json(R"({"messages": [], "format": "nope"})"), FormatError);
    EXPECT_EQ(other.messages().size(), 2u);  // a failed load changes nothing
}

// The tiny Gemma 3 slides over 64 positions; with -b 4 its rings hold 68 cells. A chat of many
// turns in a 192-token context reuses the prompt prefix each turn and drops old turns when full
// (the context shift), rewinding past what the rings still hold: the kept tokens are evaluated
// again, and every answer is the one a session with full caches (--swa-full) gives.
TEST_F(ConversationTest, SlidingWindowRingsGiveTheSameChat) {
    SessionParams p;
    p.n_ctx = 192;
    p.n_batch = 4;
    Session ring(*model_, backend_, p);
    p.swa_full = true;
    Session full(*model_, backend_, p);
    ASSERT_LT(ring.kv_cache().bytes() * 2, full.kv_cache().bytes());
    Conversation a(ring, ChatFormat::Gemma), b(full, ChatFormat::Gemma);
    a.set_system("Be brief.");
    b.set_system("Be brief.");
    int64_t reused = 0;
    size_t shifts = 0, messages = 0;
    for (int turn = 0; turn < 10; ++turn) {
        const std::string msg = "Turn " + std::to_string(turn) + ": and what about the weather tomorrow?";
        const std::string ra = a.reply(msg, greedy(12), kIgnore);
        const std::string rb = b.reply(msg, greedy(12), kIgnore);
        ASSERT_EQ(ra, rb) << "turn " << turn;
        ASSERT_EQ(ring.tokens(), full.tokens()) << "turn " << turn;
        reused += a.last_turn().n_reused;
        shifts += a.messages().size() < messages + 2;
        messages = a.messages().size();
    }
    EXPECT_GT(reused, 0);
    EXPECT_GT(shifts, 0u) << "the chat never filled the context";
}

TEST_F(ConversationTest, ClearKeepsSystem) {
    Session session = make_session();
    Conversation conv(session, ChatFormat::Gemma);
    conv.set_system("S");
    conv.reply("Hi", greedy(0), kIgnore);
    conv.clear();
    EXPECT_TRUE(conv.messages().empty());
    EXPECT_EQ(conv.system(), "S");
    conv.reply("Hi", greedy(0), kIgnore);
    // Same prompt as the first turn: all but the last token reused.
    EXPECT_EQ(conv.last_turn().n_prompt, 1);
}

}  // namespace
}  // namespace strata
