// Strict numbers for every count, size and rate the CLI takes (flags and chat /set): an integer
// is digits with an optional sign and nothing else ("3.9", "1e7", "0x10", "12abc" are refused), a
// real is a finite decimal number, and each value is checked against its allowed range, which the
// message states. Values a command lowers to what the machine or model allows are announced by
// the command (see cap_threads).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace strata::cli {

int64_t parse_int(std::string_view text, std::string_view name, int64_t min, int64_t max);
double parse_real(std::string_view text, std::string_view name, double min, double max);

// CLI11 validators with the same rules; the option's own name prefixes CLI11's message.
CLI::Validator int_in(int64_t min, int64_t max);
CLI::Validator real_in(double min, double max);

// The thread count a run may use: 0 stays 0 (the default: physical cores); more than the
// machine's logical CPUs is lowered to them, with a note on stderr naming both.
int cap_threads(int requested, std::string_view flag = "-t");

}  // namespace strata::cli
