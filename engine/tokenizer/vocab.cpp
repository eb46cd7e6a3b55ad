// Vocab: reading tokenizer.ggml.* from a ModelFile, defaults per tokenizer model, validation.
#include "engine/tokenizer/vocab.h"

#include <optional>
#include <string_view>

#include "engine/core/error.h"
#include "engine/gguf/model_file.h"

namespace strata {

namespace {

constexpr std::string_view kModel = "tokenizer.ggml.model";
constexpr std::string_view kPre = "tokenizer.ggml.pre";
constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kScores = "tokenizer.ggml.scores";
constexpr std::string_view kTypes = "tokenizer.ggml.token_type";
constexpr std::string_view kMerges = "tokenizer.ggml.merges";

// Pre-tokenizers whose models expect a BOS (llama.cpp turns add_bos on for these).
bool pre_adds_bos(std::string_view pre) {
    for (std::string_view p :
         {"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral", "tekken", "chameleon"}) {
        if (pre == p) return true;
    }
    return false;
}

std::optional<TokenId> read_id(const ModelFile& file, std::string_view key) {
    std::optional<int64_t> v = file.find_int(key);
    if (!v) return std::nullopt;
    if (*v < 0 || *v > INT32_MAX) {
        throw FormatError(cat(file.path(), ": ", key, " = ", *v, " is not a token id"));
    }
    return static_cast<TokenId>(*v);
}

void check_id(const char* what, TokenId id, int32_t n_tokens) {
    if (id != kNoToken && (id < 0 || id >= n_tokens)) {
        throw FormatError(cat("tokenizer ", what, " token id ", id,
                              " is out of range: the "
                              "vocabulary has ",
                              n_tokens, " tokens"));
    }
}

}  // namespace

TokenType Vocab::type(TokenId id) const {
    if (types.empty()) return TokenType::NORMAL;
    TokenType t = types[id];
    return t == TokenType::UNDEFINED ? TokenType::NORMAL : t;
}

const char* token_type_name(TokenType type) {
    switch (type) {
        case TokenType::UNDEFINED:
            return "undefined";
        case TokenType::NORMAL:
            return "normal";
        case TokenType::UNKNOWN:
            return "unknown";
        case TokenType::CONTROL:
            return "control";
        case TokenType::USER_DEFINED:
            return "user_defined";
        case TokenType::UNUSED:
            return "unused";
        case TokenType::BYTE:
            return "byte";
    }
    return "invalid";
}

void Vocab::validate() const {
    const int32_t n = n_tokens();
    if (tokens.empty()) throw FormatError("tokenizer vocabulary is empty (no tokens)");
    if (!scores.empty() && scores.size() != tokens.size()) {
        throw FormatError(cat("tokenizer has ", tokens.size(), " tokens but ", scores.size(),
                              " scores; ", kScores, " must be as long as ", kTokens));
    }
    if (!types.empty() && types.size() != tokens.size()) {
        throw FormatError(cat("tokenizer has ", tokens.size(), " tokens but ", types.size(),
                              " token types; ", kTypes, " must be as long as ", kTokens));
    }
    for (size_t i = 0; i < types.size(); ++i) {
        auto t = static_cast<int32_t>(types[i]);
        if (t < 0 || t > 6) {
            throw FormatError(cat("token ", i, " has type ", t, "; valid types are 0-6"));
        }
    }
    check_id("bos", bos, n);
    check_id("eos", eos, n);
    check_id("unk", unk, n);
    check_id("pad", pad, n);
    check_id("eot", eot, n);
    check_id("eom", eom, n);
}

Vocab Vocab::from_file(const ModelFile& file) {
    Vocab v;
    const std::string model = file.find_string(kModel).value_or("");
    if (model == "llama") {
        v.model = VocabModel::SPM;
    } else if (model == "gpt2") {
        v.model = VocabModel::BPE;
    } else if (model.empty()) {
        throw FormatError(cat(file.path(), ": no ", kModel, "; the file has no tokenizer"));
    } else {
        throw UnsupportedError(cat(file.path(), ": tokenizer model '", model,
                                   "' is not supported (supported: llama, gpt2)"));
    }
    v.pre = file.find_string(kPre).value_or("default");

    const GgufValue* tokens = file.find(kTokens);
    if (tokens == nullptr) throw FormatError(cat(file.path(), ": no ", kTokens));
    v.tokens = tokens->as_strings(kTokens);
    if (const GgufValue* s = file.find(kScores)) v.scores = s->as_floats(kScores);
    if (const GgufValue* t = file.find(kTypes)) {
        std::vector<int64_t> raw = t->as_ints(kTypes);
        v.types.reserve(raw.size());
        for (size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] < 0 || raw[i] > 6) {
                throw FormatError(
                    cat(file.path(), ": token ", i, " has type ", raw[i], "; valid types are 0-6"));
            }
            v.types.push_back(static_cast<TokenType>(raw[i]));
        }
    }
    if (const GgufValue* m = file.find(kMerges)) v.merges = m->as_strings(kMerges);

    const bool spm = v.model == VocabModel::SPM;
    // SPM files without ids get sentencepiece's usual layout, where the vocabulary has it.
    auto id_or = [&](std::string_view key, TokenId spm_default) {
        std::optional<TokenId> id = read_id(file, key);
        if (id) return *id;
        return spm && spm_default < v.n_tokens() ? spm_default : kNoToken;
    };
    v.bos = id_or("tokenizer.ggml.bos_token_id", 1);
    v.eos = id_or("tokenizer.ggml.eos_token_id", 2);
    v.unk = id_or("tokenizer.ggml.unknown_token_id", 0);
    v.pad = read_id(file, "tokenizer.ggml.padding_token_id").value_or(kNoToken);
    v.eot = read_id(file, "tokenizer.ggml.eot_token_id").value_or(kNoToken);
    v.eom = read_id(file, "tokenizer.ggml.eom_token_id").value_or(kNoToken);
    v.add_bos = file.find_bool("tokenizer.ggml.add_bos_token").value_or(spm || pre_adds_bos(v.pre));
    v.add_eos = file.find_bool("tokenizer.ggml.add_eos_token").value_or(false);
    v.add_space_prefix = file.find_bool("tokenizer.ggml.add_space_prefix").value_or(spm);

    try {
        v.validate();
    } catch (const FormatError& e) {
        throw FormatError(cat(file.path(), ": ", e.what()));
    }
    return v;
}

}  // namespace strata
