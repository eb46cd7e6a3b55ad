// The load progress of run, chat, serve, bench and plan (RuntimeOptions::progress): one bar per
// step ("profiling" by measurement with the one under way named, "placing weights" by layers,
// "reading weights" by bytes), drawn once a step has taken a second. Empty when stderr is not a
// terminal: nothing is drawn into a pipe, profiling lists its steps on the log as before, and the
// runtime reads no weights ahead.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace strata::cli {

std::function<void(std::string_view step, std::string_view item, uint64_t done, uint64_t total)> load_progress();

}  // namespace strata::cli
