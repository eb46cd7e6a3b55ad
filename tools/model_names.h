// Models by name on every command: `-m` takes a path or a name from the catalog
// (engine/hub/model_resolver.h), and `--hf-repo owner/repo[:QUANT]` (llama.cpp's -hf) pulls the
// model from the Hugging Face hub, then uses it as if given with -m.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/hub/hf_pull.h"

namespace strata::cli {

// Adds both to every subcommand that has a --model option. Call after the commands are added.
void add_model_names(CLI::App& app);

// The path `text` names (a path that exists, else a catalog name). Throws ArgumentError; a name
// that matches no model or several prints the models found (or the candidates) on stderr first.
std::string resolve_model_arg(const std::string& text);

// Pulls `ref` ("owner/repo[:QUANT]") with a progress bar on a terminal.
PullResult pull_with_progress(const std::string& ref);

}  // namespace strata::cli
