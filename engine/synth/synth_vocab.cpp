// Synthetic SPM and BPE vocabularies (see synth_vocab.h). Layouts follow the real families:
// Llama 2 <unk> <s> </s> then bytes; Gemma 3 <pad> <eos> <bos> <unk> ... <start_of_turn>
// <end_of_turn> then bytes; Llama 3 and Qwen put their special tokens after the BPE tokens.
#include "engine/synth/synth_vocab.h"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

#include "engine/core/error.h"
#include "engine/synth/rng.h"

namespace strata {
namespace {

constexpr uint64_t kVocabSeed = 0x5EED0F70CE45ull;      // vocabularies do not depend on --seed
constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 "▁"
constexpr int64_t kMinPieces = 16;

class VocabBuilder {
  public:
    explicit VocabBuilder(SynthVocab& v) : v_(v) {}

    bool add(std::string text, int32_t type, float score = 0.0f) {
        if (!seen_.insert(text).second) return false;
        v_.tokens.push_back(std::move(text));
        v_.token_types.push_back(type);
        if (spm_) v_.scores.push_back(score);
        return true;
    }
    // Control and padding tokens: their text must be new.
    void add_reserved(std::string text, int32_t type) {
        bool added = add(std::move(text), type);
        STRATA_INVARIANT(added && "a reserved token collides with a generated piece");
    }
    int64_t size() const { return static_cast<int64_t>(v_.tokens.size()); }
    void set_spm() { spm_ = true; }

  private:
    SynthVocab& v_;
    std::unordered_set<std::string> seen_;
    bool spm_ = false;
};

std::string random_word(Rng& rng) {
    static constexpr std::string_view kOnsets[] = {"b",  "c",  "d",  "f",  "g",  "h",  "k", "l",
                                                   "m",  "n",  "p",  "r",  "s",  "t",  "v", "w",
                                                   "st", "th", "ch", "pr", "tr", "gr", "",  ""};
    static constexpr std::string_view kVowels[] = {"a", "e", "i", "o", "u", "ea", "ou", "y"};
    std::string w;
    int syllables = 1 + static_cast<int>(rng.below(3));
    for (int s = 0; s < syllables; ++s) {
        w += kOnsets[rng.below(std::size(kOnsets))];
        w += kVowels[rng.below(std::size(kVowels))];
    }
    if (rng.below(2)) w += kOnsets[rng.below(std::size(kOnsets) - 2)];
    if (rng.below(8) == 0) w[0] = static_cast<char>(w[0] - 'a' + 'A');
    return w;
}

// The 256 <0xXX> byte tokens, then "▁"-prefixed and bare pieces with decreasing scores.
void add_spm_body(VocabBuilder& b, int64_t n_vocab) {
    for (int byte = 0; byte < 256; ++byte) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", byte);
        b.add(name, kTokenByte);
    }
    Rng rng(kVocabSeed);
    float score = 0.0f;
    auto piece = [&](std::string text) {
        if (b.size() < n_vocab && b.add(std::move(text), kTokenNormal, score)) score -= 1.0f;
    };
    piece(std::string(kSpmSpace));
    for (char c = 'a'; c <= 'z'; ++c)
        piece(std::string(kSpmSpace) + c);
    for (char c = '!'; c <= '~'; ++c)
        piece(std::string(1, c));
    while (b.size() < n_vocab) {
        std::string w = random_word(rng);
        piece(rng.below(3) ? std::string(kSpmSpace) + w : w);
    }
}

// GPT-2's byte -> code point map: printable bytes map to themselves, the other 68 to 256+n.
std::string byte_token(int byte) {
    static const std::vector<int> cps = [] {
        std::vector<int> map(256, -1);
        int next = 256;
        for (int c = 0; c < 256; ++c) {
            bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
            map[c] = printable ? c : next++;
        }
        return map;
    }();
    int cp = cps[byte];
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// Byte tokens, then merged tokens until n_regular, each with its merge in rank order.
void add_bpe_body(VocabBuilder& b, SynthVocab& v, int64_t n_regular) {
    for (int byte = 0; byte < 256; ++byte)
        b.add(byte_token(byte), kTokenNormal);
    Rng rng(kVocabSeed);
    while (b.size() < n_regular) {
        // Early (short, frequent) tokens are picked more often, as in real merge lists.
        auto pick = [&] {
            double u = rng.uniform();
            return v.tokens[static_cast<size_t>(u * u * static_cast<double>(b.size()))];
        };
        std::string left = pick();
        std::string right = pick();
        if (left.size() + right.size() > 16) continue;
        if (b.add(left + right, kTokenNormal)) v.merges.push_back(left + " " + right);
    }
}

std::vector<std::string> llama3_specials() {
    std::vector<std::string> s = {"<|begin_of_text|>", "<|end_of_text|>"};
    int reserved = 0;
    for (int i = 2; i < 256; ++i) {
        if (i == 6)
            s.push_back("<|start_header_id|>");
        else if (i == 7)
            s.push_back("<|end_header_id|>");
        else if (i == 9)
            s.push_back("<|eot_id|>");
        else
            s.push_back("<|reserved_special_token_" + std::to_string(reserved++) + "|>");
    }
    return s;
}

std::vector<std::string> qwen_specials(bool qwen3) {
    std::vector<std::string> s = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    if (qwen3) {
        for (const char* t : {"<|object_ref_start|>",
                              "<|object_ref_end|>",
                              "<|box_start|>",
                              "<|box_end|>",
                              "<|quad_start|>",
                              "<|quad_end|>",
                              "<|vision_start|>",
                              "<|vision_end|>",
                              "<|vision_pad|>",
                              "<|image_pad|>",
                              "<|video_pad|>",
                              "<tool_call>",
                              "</tool_call>",
                              "<|fim_prefix|>",
                              "<|fim_middle|>",
                              "<|fim_suffix|>",
                              "<|fim_pad|>",
                              "<|repo_name|>",
                              "<|file_sep|>",
                              "<tool_response>",
                              "</tool_response>",
                              "<think>",
                              "</think>"}) {
            s.push_back(t);
        }
    }
    return s;
}

constexpr std::string_view kChatMl =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";
constexpr std::string_view kLlama3Chat =
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}";
constexpr std::string_view kGemmaChat =
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' %}"
    "{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}";

SynthVocab llama2_vocab(int64_t n_vocab) {
    SynthVocab v;
    VocabBuilder b(v);
    b.set_spm();
    v.model = "llama";
    b.add_reserved("<unk>", kTokenUnknown);
    b.add_reserved("<s>", kTokenControl);
    b.add_reserved("</s>", kTokenControl);
    add_spm_body(b, n_vocab);
    v.special.unk = 0;
    v.special.bos = 1;
    v.special.eos = 2;
    v.add_bos = true;
    v.add_eos = false;
    return v;
}

SynthVocab gemma3_vocab(int64_t n_vocab) {
    SynthVocab v;
    VocabBuilder b(v);
    b.set_spm();
    v.model = "llama";
    v.pre = "default";
    constexpr float kControlScore = -1000.0f;  // as in the real Gemma 3 vocabulary
    for (const char* t : {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"}) {
        b.add(t, kTokenControl, kControlScore);
    }
    b.add("[multimodal]", kTokenUserDefined, kControlScore);
    for (int i = 0; b.size() < 105; ++i) {
        b.add("<unused" + std::to_string(i) + ">", kTokenControl, kControlScore);
    }
    b.add("<start_of_turn>", kTokenControl, kControlScore);
    b.add("<end_of_turn>", kTokenControl, kControlScore);
    add_spm_body(b, n_vocab);
    v.special = {.bos = 2, .eos = 1, .unk = 3, .pad = 0};
    v.add_bos = true;
    v.add_eos = false;
    v.add_space_prefix = false;
    v.chat_template = kGemmaChat;
    return v;
}

// Regular BPE tokens up to max_regular, then the special tokens, then [PAD<id>] up to
// n_vocab. Returns the id of the first special token in `first_special`.
SynthVocab bpe_vocab(int64_t n_vocab, std::vector<std::string> specials, int64_t max_regular,
                     int64_t& first_special) {
    SynthVocab v;
    VocabBuilder b(v);
    v.model = "gpt2";
    first_special = std::min(max_regular, n_vocab - static_cast<int64_t>(specials.size()));
    add_bpe_body(b, v, first_special);
    for (std::string& s : specials)
        b.add_reserved(std::move(s), kTokenControl);
    for (int64_t i = b.size(); i < n_vocab; ++i) {
        b.add_reserved("[PAD" + std::to_string(i) + "]", kTokenUnused);
    }
    return v;
}

}  // namespace

int64_t min_vocab_size(VocabStyle style) {
    switch (style) {
        case VocabStyle::Llama2Spm:
            return 3 + 256 + 26 + 94 + kMinPieces;
        case VocabStyle::Gemma3Spm:
            return 107 + 256 + 26 + 94 + kMinPieces;
        case VocabStyle::Llama3Bpe:
            return 256 + 256 + kMinPieces;
        case VocabStyle::Qwen2Bpe:
            return 3 + 256 + kMinPieces;
        case VocabStyle::Qwen3Bpe:
            return 26 + 256 + kMinPieces;
    }
    return 0;
}

SynthVocab make_synth_vocab(VocabStyle style, int64_t n_vocab) {
    if (n_vocab < min_vocab_size(style)) {
        throw ArgumentError(cat("vocabulary of ", n_vocab,
                                " tokens is too small for this model "
                                "family (at least ",
                                min_vocab_size(style), ")"));
    }
    switch (style) {
        case VocabStyle::Llama2Spm:
            return llama2_vocab(n_vocab);
        case VocabStyle::Gemma3Spm:
            return gemma3_vocab(n_vocab);
        case VocabStyle::Llama3Bpe: {
            int64_t first = 0;
            SynthVocab v = bpe_vocab(n_vocab, llama3_specials(), 128000, first);
            v.pre = "llama-bpe";
            v.special.bos = first;      // <|begin_of_text|>
            v.special.eos = first + 9;  // <|eot_id|>, as in the instruct models
            v.special.eot = first + 9;
            v.add_bos = true;
            v.chat_template = kLlama3Chat;
            return v;
        }
        case VocabStyle::Qwen2Bpe:
        case VocabStyle::Qwen3Bpe: {
            int64_t first = 0;
            SynthVocab v =
                bpe_vocab(n_vocab, qwen_specials(style == VocabStyle::Qwen3Bpe), 151643, first);
            v.pre = "qwen2";
            v.special.bos = first;      // <|endoftext|>
            v.special.eos = first + 2;  // <|im_end|>
            v.special.pad = first;
            v.add_bos = false;
            v.chat_template = kChatMl;
            return v;
        }
    }
    throw ArgumentError("unknown vocabulary style");
}

}  // namespace strata
