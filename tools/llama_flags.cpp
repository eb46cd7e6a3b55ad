// llama.cpp flag spellings and suggestions for unknown flags (llama_flags.h).
#include "tools/llama_flags.h"

#include "engine/core/error.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <utility>
#include <vector>

namespace strata::cli {
namespace {

// llama.cpp's multi-letter short flags (llama-cli, llama-server, llama-bench, llama-perplexity)
// and the long names Strata gives them.
const std::vector<std::pair<std::string_view, std::string_view>>& short_flags() {
    static const std::vector<std::pair<std::string_view, std::string_view>> table = {
        {"-ngl", "--n-gpu-layers"}, {"-fa", "--flash-attn"},     {"-ctk", "--cache-type-k"},
        {"-ctv", "--cache-type-v"}, {"-ub", "--ubatch-size"},    {"-cnv", "--conversation"},
        {"-no-cnv", "--no-conversation"}, {"-st", "--single-turn"}, {"-sys", "--system-prompt"},
        {"-hf", "--hf-repo"},       {"-hfr", "--hf-repo"},       {"-ot", "--override-tensor"},
        {"-co", "--color"},         {"-np", "--parallel"},       {"-cb", "--cont-batching"},
        {"-mmp", "--mmap"},         {"-md", "--model-draft"},    {"-ngld", "--gpu-layers-draft"},
    };
    return table;
}

std::deque<std::string>& storage() {
    static std::deque<std::string> strings;  // stable addresses for argv
    return strings;
}

// The flag a word names, without a "=value" tail.
std::string flag_of(const std::string& word) {
    const size_t eq = word.find('=');
    return eq == std::string::npos ? word : word.substr(0, eq);
}

std::string nearest_flag(const CLI::App& cmd, const std::string& flag) {
    std::string best;
    size_t best_d = SIZE_MAX;
    const auto consider = [&](const std::string& name) {
        const size_t d = edit_distance(flag, name);
        if (d < best_d) {
            best_d = d;
            best = name;
        }
    };
    for (const CLI::Option* o : cmd.get_options()) {
        for (const std::string& l : o->get_lnames()) consider("--" + l);
        for (const std::string& s : o->get_snames()) consider("-" + s);
    }
    for (const auto& [short_name, long_name] : short_flags()) {
        if (cmd.get_option_no_throw(std::string(long_name)) != nullptr) consider(std::string(short_name));
    }
    // A guess farther than half the word is no help.
    return best_d <= std::max<size_t>(2, flag.size() / 2) ? best : std::string();
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

// A single-dash word of letters one edit from a llama.cpp short flag ("-ngll") would reach
// CLI11 as a one-letter flag with a value ("-n gll"): named as the typo it is instead.
void check_near_miss(const std::string& flag) {
    if (flag.size() < 3 || flag[1] == '-') return;
    if (!std::all_of(flag.begin() + 1, flag.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); })) {
        return;
    }
    for (const auto& [short_name, long_name] : short_flags()) {
        if (edit_distance(flag, short_name) == 1) {
            throw ArgumentError(cat("unknown flag '", flag, "' (did you mean ", short_name, "?)"));
        }
    }
}

void rewrite_llama_flags(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--") return;
        const std::string flag = flag_of(word);
        bool known = false;
        for (const auto& [short_name, long_name] : short_flags()) {
            if (flag != short_name) continue;
            storage().push_back(std::string(long_name) + word.substr(flag.size()));
            argv[i] = storage().back().data();
            known = true;
            break;
        }
        // A value that follows a flag ("-p -stx") is the user's text, not a flag.
        const bool value = i > 1 && argv[i - 1][0] == '-' && std::string(argv[i - 1]).find('=') == std::string::npos &&
                           std::string(argv[i - 1]).size() > 1;
        if (!known && !value && word[0] == '-') check_near_miss(flag);
    }
}

std::string explain_parse_error(const CLI::App& app, const CLI::ParseError& error) {
    const auto* extras = dynamic_cast<const CLI::ExtrasError*>(&error);
    if (extras == nullptr) return error.what();
    const std::vector<CLI::App*> chosen = app.get_subcommands();
    const CLI::App& cmd = chosen.empty() ? app : *chosen.front();
    std::vector<std::string> unknown = cmd.remaining();
    if (unknown.empty()) unknown = app.remaining();
    for (const std::string& word : unknown) {
        if (word.size() < 2 || word[0] != '-' || (word[1] >= '0' && word[1] <= '9')) continue;
        const std::string flag = flag_of(word);
        const std::string guess = nearest_flag(cmd, flag);
        const std::string where = chosen.empty() ? "strata" : "strata " + cmd.get_name();
        return "unknown flag '" + flag + "' for " + where +
               (guess.empty() ? std::string(" (see --help)") : " (did you mean " + guess + "?)");
    }
    if (!unknown.empty()) return "unexpected argument '" + unknown.front() + "' (values follow their flag, e.g. -p TEXT)";
    return error.what();
}

}  // namespace strata::cli
