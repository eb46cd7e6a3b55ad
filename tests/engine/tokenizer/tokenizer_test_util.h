// Helpers for the tokenizer tests: the corpus and its cases, the oracle fixtures, GGUF files
// written with GgufWriter and read back through ModelFile, and small hand-made vocabularies.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/model_file.h"
#include "engine/tokenizer/bpe.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace strata::test {

inline std::string source_dir() {
    const char* dir = std::getenv("STRATA_SOURCE_DIR");
    return dir != nullptr ? dir : STRATA_TEST_SOURCE_DIR;
}

inline std::string data_path(const std::string& name) {
    return source_dir() + "/tests/engine/tokenizer/" + name;
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline std::string fnv1a64_hex(const std::string& data) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char c : data)
        h = (h ^ c) * 0x100000001B3ull;
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

// The corpus split into lines at "\n" only (lines keep \r, \f, U+2028...).
inline std::vector<std::string> corpus_lines(const std::string& raw) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < raw.size()) {
        size_t nl = raw.find('\n', start);
        if (nl == std::string::npos) nl = raw.size();
        lines.push_back(raw.substr(start, nl - start));
        start = nl + 1;
    }
    return lines;
}

// The fixture cases, exactly as make_fixtures.py builds them: every line, then blocks of
// `block` lines from the first `block_lines`, joined by "\n".
inline std::vector<std::string> corpus_cases(const std::string& raw, size_t block,
                                             size_t block_lines) {
    std::vector<std::string> lines = corpus_lines(raw);
    std::vector<std::string> cases = lines;
    size_t head = std::min(block_lines, lines.size());
    for (size_t i = 0; i < head; i += block) {
        std::string joined;
        for (size_t j = i; j < std::min(i + block, head); ++j) {
            if (j > i) joined += '\n';
            joined += lines[j];
        }
        cases.push_back(joined);
    }
    return cases;
}

struct Fixture {
    nlohmann::json header;
    std::vector<nlohmann::json> rows;
    std::vector<std::string> cases;
};

// Reads a .jsonl fixture and the corpus it was made from; fails the test if they disagree.
inline Fixture load_fixture(const std::string& name) {
    Fixture f;
    std::istringstream in(read_file(data_path(name)));
    std::string line;
    std::getline(in, line);
    f.header = nlohmann::json::parse(line);
    while (std::getline(in, line))
        f.rows.push_back(nlohmann::json::parse(line));
    const std::string raw = read_file(data_path("corpus.txt"));
    EXPECT_EQ(f.header.at("corpus_fnv1a64").get<std::string>(), fnv1a64_hex(raw))
        << "corpus.txt changed since " << name << " was made: rerun make_fixtures.py";
    f.cases = corpus_cases(raw, f.header.at("block").get<size_t>(),
                           f.header.at("block_lines").get<size_t>());
    EXPECT_EQ(f.cases.size(), f.rows.size());
    EXPECT_EQ(f.header.at("cases").get<size_t>(), f.rows.size());
    return f;
}

// A directory removed at the end of the test.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "strata-tok-XXXXXX").string();
        path = mkdtemp(tmpl.data());
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

// Writes `vocab` as the tokenizer.ggml.* keys of a GGUF file with no tensors.
inline void write_vocab_gguf(const std::string& path, const Vocab& v) {
    GgufWriter w(path);
    w.set("general.architecture", GgufValue::string("test"));
    w.set("tokenizer.ggml.model", GgufValue::string(v.model == VocabModel::SPM ? "llama" : "gpt2"));
    w.set("tokenizer.ggml.pre", GgufValue::string(v.pre));
    w.set("tokenizer.ggml.tokens", GgufValue::strings(v.tokens));
    if (!v.scores.empty()) w.set("tokenizer.ggml.scores", GgufValue::f32s(v.scores));
    if (!v.types.empty()) {
        std::vector<int32_t> types;
        for (TokenType t : v.types)
            types.push_back(static_cast<int32_t>(t));
        w.set("tokenizer.ggml.token_type", GgufValue::i32s(types));
    }
    if (!v.merges.empty()) w.set("tokenizer.ggml.merges", GgufValue::strings(v.merges));
    auto set_id = [&](const char* key, TokenId id) {
        if (id != kNoToken) w.set(key, GgufValue::u32(static_cast<uint32_t>(id)));
    };
    set_id("tokenizer.ggml.bos_token_id", v.bos);
    set_id("tokenizer.ggml.eos_token_id", v.eos);
    set_id("tokenizer.ggml.unknown_token_id", v.unk);
    set_id("tokenizer.ggml.padding_token_id", v.pad);
    set_id("tokenizer.ggml.eot_token_id", v.eot);
    w.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(v.add_bos));
    w.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(v.add_eos));
    w.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(v.add_space_prefix));
    w.write_header();
    w.finish();
}

// GPT-2's vocabulary (from openai-whisper's copy of merges.txt): ids 0-255 the byte symbols in
// bytes_to_unicode order, 256 + i the result of merge i, 50256 <|endoftext|> (CONTROL).
inline Vocab gpt2_vocab(const std::string& pre, bool add_bos) {
    Vocab v;
    v.model = VocabModel::BPE;
    v.pre = pre;
    const auto& chars = byte_level_chars();
    std::vector<int> order;
    auto printable = [](int b) {
        return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    };
    for (int b = 0; b < 256; ++b) {
        if (printable(b)) order.push_back(b);
    }
    for (int b = 0; b < 256; ++b) {
        if (!printable(b)) order.push_back(b);
    }
    for (int b : order)
        v.tokens.push_back(chars[b]);
    std::istringstream in(read_file(data_path("gpt2_merges.txt")));
    std::string line;
    std::getline(in, line);  // "#version: 0.2"
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        size_t space = line.find(' ');
        v.tokens.push_back(line.substr(0, space) + line.substr(space + 1));
        v.merges.push_back(line);
    }
    v.tokens.push_back("<|endoftext|>");
    v.types.assign(v.tokens.size(), TokenType::NORMAL);
    v.types.back() = TokenType::CONTROL;
    v.bos = v.eos = v.n_tokens() - 1;
    v.add_bos = add_bos;
    return v;
}

inline std::vector<TokenId> ids_of(const nlohmann::json& j) {
    return j.get<std::vector<TokenId>>();
}

// "a b c" rendering of ids with their token texts, for failure messages.
inline std::string show(const Tokenizer& tok, const std::vector<TokenId>& ids) {
    std::string s;
    for (TokenId id : ids) {
        if (!s.empty()) s += ' ';
        s += std::to_string(id);
        if (id >= 0 && id < tok.n_tokens()) s += "'" + tok.vocab().tokens[id] + "'";
    }
    return s;
}

}  // namespace strata::test

namespace strata::test {

// A small SPM vocabulary: 0 <unk> (UNKNOWN), 1 <s> and 2 </s> (CONTROL), 3-258 the byte tokens
// <0x00>..<0xFF>, then `pieces` (NORMAL, with scores), then `extra` (score 0, given types).
inline Vocab small_spm(const std::vector<std::pair<std::string, float>>& pieces,
                       const std::vector<std::pair<std::string, TokenType>>& extra = {}) {
    Vocab v;
    v.model = VocabModel::SPM;
    auto add = [&](const std::string& text, float score, TokenType type) {
        v.tokens.push_back(text);
        v.scores.push_back(score);
        v.types.push_back(type);
    };
    add("<unk>", 0, TokenType::UNKNOWN);
    add("<s>", 0, TokenType::CONTROL);
    add("</s>", 0, TokenType::CONTROL);
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        add(name, 0, TokenType::BYTE);
    }
    for (const auto& [text, score] : pieces)
        add(text, score, TokenType::NORMAL);
    for (const auto& [text, type] : extra)
        add(text, 0, type);
    v.unk = 0;
    v.bos = 1;
    v.eos = 2;
    v.add_bos = true;
    return v;
}

inline TokenId byte_id(uint8_t b) {
    return 3 + b;
}  // in small_spm

}  // namespace strata::test
