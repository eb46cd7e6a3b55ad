// PreTokenizer: the regex per pre-tokenizer name, compiled once with PCRE2_UTF | PCRE2_UCP (and
// JIT where available), then matched over each valid UTF-8 run.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "engine/tokenizer/pre_tokenizer.h"

#include <pcre2.h>

#include "engine/core/error.h"
#include "engine/tokenizer/utf8.h"

namespace strata {

namespace {

// GPT-2's pattern, also what Hugging Face's ByteLevel pre-tokenizer uses by default.
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Llama 3: case-insensitive contractions, a letter run with one leading non-letter, numbers in
// groups of up to three digits, punctuation runs with trailing newlines.
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen 2: as Llama 3 but every digit on its own.
constexpr const char* kQwen2 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
                               R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct PreSpec {
    const char* name;
    const char* pattern;
    bool ignore_merges;
};

// "default" (no or an empty tokenizer.ggml.pre) gets GPT-2's pattern, which is what Hugging
// Face's GGUF loader does for it; llama.cpp's own "default" list differs and is not modelled.
constexpr PreSpec kPres[] = {
    {"gpt-2", kGpt2, false},      {"default", kGpt2, false},    {"llama3", kLlama3, true},
    {"llama-v3", kLlama3, true},  {"llama-bpe", kLlama3, true}, {"falcon3", kLlama3, true},
    {"smaug-bpe", kLlama3, true}, {"qwen2", kQwen2, false},     {"deepseek-r1-qwen", kQwen2, false},
};

}  // namespace

struct PreTokenizer::Regex {
    pcre2_code* code = nullptr;
    ~Regex() { pcre2_code_free(code); }
};

std::vector<std::string> PreTokenizer::known_names() {
    std::vector<std::string> names;
    for (const PreSpec& p : kPres)
        names.emplace_back(p.name);
    return names;
}

PreTokenizer::PreTokenizer(const std::string& pre) : name_(pre.empty() ? "default" : pre) {
    const PreSpec* spec = nullptr;
    for (const PreSpec& p : kPres) {
        if (name_ == p.name) spec = &p;
    }
    if (spec == nullptr) {
        std::string known;
        for (const PreSpec& p : kPres)
            known += known.empty() ? p.name : std::string(", ") + p.name;
        throw UnsupportedError(cat("BPE pre-tokenizer '", name_,
                                   "' (tokenizer.ggml.pre) is not "
                                   "supported; supported: ",
                                   known));
    }
    pattern_ = spec->pattern;
    ignore_merges_ = spec->ignore_merges;

    regex_ = std::make_unique<Regex>();
    int error = 0;
    PCRE2_SIZE offset = 0;
    regex_->code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.c_str()), PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    STRATA_INVARIANT(regex_->code != nullptr && "built-in pre-tokenizer pattern compiles");
    // JIT is an optimisation only: without it (or if it fails) the interpreter runs.
    pcre2_jit_compile(regex_->code, PCRE2_JIT_COMPLETE);
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
    std::vector<std::string_view> words;
    size_t run_start = 0;
    for (size_t pos = 0; pos < text.size();) {
        size_t n = utf8_char_length(text, pos);
        if (n != 0) {
            pos += n;
            continue;
        }
        split_valid(text.substr(run_start, pos - run_start), &words);
        words.push_back(text.substr(pos, 1));
        run_start = ++pos;
    }
    split_valid(text.substr(run_start), &words);
    return words;
}

void PreTokenizer::split_valid(std::string_view text, std::vector<std::string_view>* out) const {
    if (text.empty()) return;
    auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(regex_->code, nullptr);
    size_t done = 0;  // text before this is already in `out`
    size_t pos = 0;
    while (pos < text.size()) {
        int rc = pcre2_match(regex_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, match,
                             nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
            // The JIT's small stack ran out (a very long run); the interpreter uses the heap.
            rc = pcre2_match(regex_->code, subject, text.size(), pos,
                             PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, match, nullptr);
        }
        if (rc < 0) break;  // no further match (or a resource limit): the rest is one word
        PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
        size_t start = ov[0], end = ov[1];
        if (end == start) {  // the patterns cannot match empty; never loop on one anyway
            pos = start + utf8_unit_length(text, start);
            continue;
        }
        if (start > done) out->push_back(text.substr(done, start - done));
        out->push_back(text.substr(start, end - start));
        done = pos = end;
    }
    if (done < text.size()) out->push_back(text.substr(done));
    pcre2_match_data_free(match);
}

}  // namespace strata
