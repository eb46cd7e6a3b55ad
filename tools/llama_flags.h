// llama.cpp's command-line spellings: its multi-letter single-dash flags (-ngl, -fa, -ctk ...)
// are rewritten to their long names before CLI11 parses (CLI11 takes one-letter short flags
// only, and would read -fa as -f a), and an unknown flag is answered with the nearest known one.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace strata::cli {

// Rewrites argv[1..argc) in place: each llama.cpp multi-letter short flag becomes its long name
// ("-ngl" -> "--n-gpu-layers"), also in the "-ngl=99" form. Words after "--" are left alone.
// The rewritten strings live until the program ends.
void rewrite_llama_flags(int argc, char** argv);

// For a parse error: "unknown flag '--ngpu' (did you mean --n-gpu?)" naming the known flag of
// the chosen subcommand nearest by edit distance; other errors keep CLI11's text.
std::string explain_parse_error(const CLI::App& app, const CLI::ParseError& error);

// Levenshtein distance (insertions, deletions, substitutions), for the suggestion.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace strata::cli
