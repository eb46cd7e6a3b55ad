// The strata subcommands. Each adds itself to the app with its options and a callback that
// runs it; main() parses and turns any exception into one "strata: error: ..." line.
// A new subcommand is a cmd_<name>.cpp plus one line here and one in main.cpp.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

void add_inspect_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_calibration_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_list_command(CLI::App& app);
void add_pull_command(CLI::App& app);

}  // namespace strata::cli
