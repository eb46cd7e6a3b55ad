// The three places a weight can live (byte sizes as users write them: engine/core/byte_size.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/core/byte_size.h"

namespace strata {

enum class Tier { Gpu, Ram, Disk };

std::string_view tier_name(Tier tier);  // "gpu", "ram", "disk"
Tier parse_tier(std::string_view name);  // case-insensitive; throws ArgumentError

}  // namespace strata
