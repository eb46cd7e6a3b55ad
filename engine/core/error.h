// Error types shared by every Strata library. Bad input and bad environment are exceptions
// whose message carries the values involved and, where there is one, what to do about it.
// tools/ catches them in main and prints one line; nothing below tools/ prints.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace strata {

// Base of all Strata errors.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A file (GGUF, plan, profile, fixture) that is malformed, truncated or hostile.
class FormatError : public Error {
public:
    using Error::Error;
};

// Something well-formed that we do not support (an architecture, a tensor type).
class UnsupportedError : public Error {
public:
    using Error::Error;
};

// A request that does not fit the budget or the machine.
class BudgetError : public Error {
public:
    using Error::Error;
};

// Invalid arguments from a caller (CLI values, API misuse detected at run time).
class ArgumentError : public Error {
public:
    using Error::Error;
};

// The operating system refused something (open, mmap, read).
class SystemError : public Error {
public:
    using Error::Error;
};

// Concatenates any streamable values into one string: cat("n_dims = ", n, ", max 4").
template <typename... Args>
std::string cat(Args&&... args) {
    std::ostringstream out;
    (out << ... << std::forward<Args>(args));
    return out.str();
}

// `x` with `digits` decimals: fixed(3.14159, 2) == "3.14".
std::string fixed(double x, int digits);

// Internal invariant: a failed check is a bug in Strata, not bad input. The message names the
// invariant so a report says what broke.
[[noreturn]] void invariant_failed(const char* invariant, const char* file, int line);

}  // namespace strata

#define STRATA_INVARIANT(cond) \
    ((cond) ? (void)0 : ::strata::invariant_failed(#cond, __FILE__, __LINE__))
