// Bounded reads: the one way Strata reads a file that is not a model (a plan, statistics, a
// hardware profile, calibration runs, a chat save, a prompt or text). Only regular files are
// opened, checked before any blocking open (a fifo, folder or device is refused by name), each
// kind of file has a size cap, and JSON nesting is capped so that no file can exhaust the stack or
// the memory. Errors name the file, what it was for and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace strata {

// Size caps per kind of file.
constexpr uint64_t kMaxJsonFileBytes = 64ull << 20;   // plan, stats index, profile, calibration, chat save
constexpr uint64_t kMaxTextFileBytes = 512ull << 20;  // prompts and perplexity texts
constexpr int kMaxJsonDepth = 64;

struct ReadOptions {
    uint64_t max_bytes = kMaxJsonFileBytes;
    // Record the file as an input of the run (safe_write.h refuses to write over it). Off for the
    // caches a command reads and then updates (hardware profile, calibration runs).
    bool note_input = true;
};

// The whole file. Throws SystemError (missing, unreadable, not a regular file) or ArgumentError
// (over the size cap), naming `what` and the path.
std::string read_bounded_file(const std::string& path, std::string_view what,
                              const ReadOptions& options = {});

// Throws SystemError unless `path` is a regular file (or a symbolic link to one); checked
// without opening it, so a fifo never blocks. Models are checked this way before their open.
void check_regular_file(const std::string& path, std::string_view what);

// Throws FormatError naming `what` when arrays and objects nest deeper than kMaxJsonDepth (checked
// before any parser recurses).
void check_json_depth(std::string_view text, std::string_view what);

// Parses JSON text with nesting at most kMaxJsonDepth; throws FormatError naming `what` on
// malformed or too deeply nested text.
nlohmann::json parse_json_bounded(std::string_view text, std::string_view what);

// read_bounded_file + parse_json_bounded.
nlohmann::json read_json_file(const std::string& path, std::string_view what,
                              const ReadOptions& options = {});

}  // namespace strata
