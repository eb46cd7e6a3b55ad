// The three places a weight can live, and memory sizes as users write them ("6G", "512MiB").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

enum class Tier { Gpu, Ram, Disk };

std::string_view tier_name(Tier tier);  // "gpu", "ram", "disk"
Tier parse_tier(std::string_view name);  // case-insensitive; throws ArgumentError

// Parses a byte count: a number with an optional unit K, M, G, T (binary, 1024-based), with or
// without a trailing "B" or "iB" ("6G", "6GiB", "1.5g", "512M", "4096"). Throws ArgumentError
// with the text on anything else, negative values or overflow.
uint64_t parse_byte_size(std::string_view text);
// "5.80 GiB", "512.0 MiB", "123 B".
std::string format_bytes(uint64_t bytes);

}  // namespace strata
