// Reads and checks the tokenizer.* keys of a model: the kind of tokenizer, array lengths equal
// to the vocabulary, special token ids inside it, and the add_bos/eos/space defaults
// llama.cpp applies when a key is absent (docs/FORMATS.md §1.9).
#include <algorithm>
#include <array>

#include "engine/core/error.h"
#include "engine/model/config_checks.h"
#include "engine/model/gguf_keys.h"
#include "engine/model/key_reader.h"

namespace strata {
namespace {

// BPE pre-tokenizers for which llama.cpp adds BOS by default.
constexpr std::array<std::string_view, 6> kBosByDefaultPre = {"llama3",  "llama-v3", "llama-bpe",
                                                              "falcon3", "tekken",   "chameleon"};

bool has_no_vocab(const std::string& model) {
    return model == "none" || model == "no_vocab";
}

void check_length(const KeyReader& keys, std::string_view key, std::string_view kind,
                  int64_t n_tokens) {
    std::optional<uint64_t> n = keys.find_array_size(key, kind);
    if (n && static_cast<int64_t>(*n) != n_tokens) {
        keys.fail(
            cat("'", key, "' has ", *n, " entries but the vocabulary has ", n_tokens, " tokens"));
    }
}

void read_special(const KeyReader& keys, std::string_view key, int64_t fallback, int64_t n_vocab,
                  int64_t& out) {
    std::optional<int64_t> id = keys.find_int(key);
    if (!id) {
        out = fallback < n_vocab ? fallback : -1;
        return;
    }
    if (*id < 0 || *id >= n_vocab) {
        keys.fail(cat("'", key, "' is ", *id, ", outside the vocabulary of ", n_vocab, " tokens"));
    }
    out = *id;
}

}  // namespace

void read_tokenizer(const KeyReader& keys, int64_t embd_rows, ModelConfig& c) {
    TokenizerConfig& t = c.tokenizer;
    std::optional<std::string> model = keys.find_string(keys::kTokModel);
    if (!model) keys.fail(cat("missing required key '", keys::kTokModel, "'"));
    t.model = *model;
    t.pre = keys.find_string(keys::kTokPre).value_or("");

    std::string vocab_key = keys.key(keys::kVocabSize);
    std::optional<int64_t> vocab_size = keys.find_int(vocab_key);
    if (has_no_vocab(t.model)) {
        c.n_vocab = vocab_size.value_or(embd_rows);
    } else {
        std::optional<uint64_t> n = keys.find_array_size(keys::kTokTokens, "string");
        if (!n) keys.fail(cat("missing required key '", keys::kTokTokens, "'"));
        t.n_tokens = static_cast<int64_t>(*n);
        if (vocab_size && *vocab_size != t.n_tokens) {
            keys.fail(cat("'", keys::kTokTokens, "' has ", t.n_tokens, " entries but '", vocab_key,
                          "' is ", *vocab_size));
        }
        c.n_vocab = t.n_tokens;
    }
    check_range(keys, "vocabulary size", c.n_vocab, 1, kMaxVocab);

    if (!has_no_vocab(t.model)) {
        check_length(keys, keys::kTokScores, "float", t.n_tokens);
        check_length(keys, keys::kTokTokenType, "integer", t.n_tokens);
        t.has_scores = keys.has(keys::kTokScores);
        t.has_token_types = keys.has(keys::kTokTokenType);
        t.n_merges =
            static_cast<int64_t>(keys.find_array_size(keys::kTokMerges, "string").value_or(0));
        if (t.model == "gpt2" && t.n_merges == 0) {
            keys.fail(cat("BPE (gpt2) tokenizer without '", keys::kTokMerges, "'"));
        }
    }

    // llama.cpp's SPM defaults when the ids are absent: bos 1, eos 2, unk 0.
    bool spm = t.model == "llama";
    SpecialTokens& s = t.special;
    read_special(keys, keys::kTokBos, spm ? 1 : -1, c.n_vocab, s.bos);
    read_special(keys, keys::kTokEos, spm ? 2 : -1, c.n_vocab, s.eos);
    read_special(keys, keys::kTokUnk, spm ? 0 : -1, c.n_vocab, s.unk);
    read_special(keys, keys::kTokPad, -1, c.n_vocab, s.pad);
    read_special(keys, keys::kTokSep, -1, c.n_vocab, s.sep);
    read_special(keys, keys::kTokEot, -1, c.n_vocab, s.eot);
    read_special(keys, keys::kTokEom, -1, c.n_vocab, s.eom);
    read_special(keys, keys::kTokMask, -1, c.n_vocab, s.mask);

    bool bos_by_default = spm || std::find(kBosByDefaultPre.begin(), kBosByDefaultPre.end(),
                                           t.pre) != kBosByDefaultPre.end();
    t.add_bos = keys.find_bool(keys::kTokAddBos).value_or(bos_by_default);
    t.add_eos = keys.find_bool(keys::kTokAddEos).value_or(false);
    t.add_space_prefix = keys.find_bool(keys::kTokAddSpacePrefix).value_or(spm);
    t.has_chat_template = keys.find_string(keys::kChatTemplate).has_value();
}

}  // namespace strata
