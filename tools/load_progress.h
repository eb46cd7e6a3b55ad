// The load progress of run, chat, serve and bench (RuntimeOptions::progress): one bar per step
// ("placing weights" by layers, "reading weights" by bytes), drawn once a step has taken a
// second. Empty when stderr is not a terminal, so nothing is drawn into a pipe and the runtime
// then reads no weights ahead.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace strata::cli {

std::function<void(std::string_view step, uint64_t done, uint64_t total)> load_progress();

}  // namespace strata::cli
