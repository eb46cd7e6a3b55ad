// Temporary files that must not outlive the process: each registered path is removed when the
// process gets SIGINT, SIGTERM or SIGHUP (then the signal's default action runs), and by the
// owner on normal exit. Registration is async-signal-safe to read; at most kMaxTempFiles at once.
#pragma once

#include <string>

namespace strata {

constexpr int kMaxTempFiles = 32;

// Registers `path`; returns a slot for unregister_temp_file, or -1 when every slot is taken (the
// file is then only removed by its owner). Installs the signal handlers on first use, except for a
// signal whose handler the program has set already (chat's SIGINT stops an answer instead).
int register_temp_file(const std::string& path);
void unregister_temp_file(int slot);

// Temporary names are "<folder>/.<name>.strata-tmp.<pid>"; removes those of `target` whose
// process no longer runs (left by a kill -9).
std::string temp_path_for(const std::string& target);
void remove_stale_temp_files(const std::string& target);

}  // namespace strata
