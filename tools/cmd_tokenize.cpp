// strata tokenize: the tokens of a text as the model's tokenizer makes them (llama-tokenize):
// one "id -> 'piece'" line each, only the ids (--ids), or JSON (--json).
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/bounded_read.h"
#include "engine/core/error.h"
#include "engine/runtime/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/prompt_text.h"

namespace strata::cli {
namespace {

struct TokenizeArgs {
    std::string model;
    std::string prompt;
    std::string file;
    bool ids = false;
    bool json = false;
    bool no_bos = false;      // --no-bos: no BOS/EOS the vocabulary would add
    bool no_special = false;  // --no-parse-special: control-token spellings stay text
    bool no_escape = false;
};

void tokenize(const TokenizeArgs& a) {
    std::string text = a.file.empty() ? a.prompt : read_bounded_file(a.file, "text file", ReadOptions{kMaxTextFileBytes});
    if (a.file.empty() && !a.no_escape) text = process_escapes(text);
    const Model model(a.model);
    const Tokenizer& tok = model.tokenizer();
    const std::vector<TokenId> ids = tok.encode(text, !a.no_bos, !a.no_special);
    if (a.json) {
        nlohmann::json pieces = nlohmann::json::array();
        for (TokenId id : ids) {
            // A piece may end inside a UTF-8 character: kept as replacement-safe text.
            pieces.push_back(tok.token_to_piece(id, true));
        }
        const nlohmann::json j = {{"ids", ids}, {"pieces", pieces}, {"n_tokens", ids.size()}};
        std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else if (a.ids) {
        std::string line = "[";
        for (size_t i = 0; i < ids.size(); ++i) line += (i ? ", " : "") + std::to_string(ids[i]);
        std::printf("%s]\n", line.c_str());
    } else {
        std::printf("%s", token_lines(tok, ids).c_str());
    }
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
    auto args = std::make_shared<TokenizeArgs>();
    CLI::App* cmd = app.add_subcommand("tokenize", "the tokens of a text (ids and pieces)");
    cmd->add_option("-m,--model", args->model, "GGUF model file")->required();
    auto* p = cmd->add_option("-p,--prompt", args->prompt, "text (\\n, \\t ... are read as escapes)");
    auto* f = cmd->add_option("-f,--file", args->file, "read the text from a file");
    p->excludes(f);
    cmd->add_flag("--ids", args->ids, "print only the ids, as [1, 2, 3]");
    cmd->add_flag("--json", args->json, "print ids and pieces as JSON");
    cmd->add_flag("--no-bos", args->no_bos, "without the BOS/EOS tokens the vocabulary adds");
    cmd->add_flag("--no-parse-special", args->no_special, "read control-token spellings as text");
    cmd->add_flag("--no-escape", args->no_escape, "keep backslashes in -p as typed");
    cmd->callback([args, p, f] {
        if (p->count() == 0 && f->count() == 0) throw CLI::RequiredError("a text: -p TEXT or -f FILE");
        tokenize(*args);
    });
}

}  // namespace strata::cli
