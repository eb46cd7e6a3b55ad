// Memory sizes as users write them ("6G", "512MiB") and as Strata prints them ("5.80 GiB").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

// Parses a byte count: a number with an optional unit K, M, G, T (binary, 1024-based), with or
// without a trailing "B" or "iB" ("6G", "6GiB", "1.5g", "512M", "4096"). Throws ArgumentError
// with the text on anything else, negative values or overflow.
uint64_t parse_byte_size(std::string_view text);
// "5.80 GiB", "512.0 MiB", "123 B".
std::string format_bytes(uint64_t bytes);

}  // namespace strata
