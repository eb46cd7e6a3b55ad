// Tier names (tier.h).
#include "offload/tier.h"

#include <cctype>
#include <string>

#include "engine/core/error.h"

namespace strata {

std::string_view tier_name(Tier tier) {
    switch (tier) {
        case Tier::Gpu: return "gpu";
        case Tier::Ram: return "ram";
        case Tier::Disk: return "disk";
    }
    return "?";
}

Tier parse_tier(std::string_view name) {
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "gpu") return Tier::Gpu;
    if (lower == "ram") return Tier::Ram;
    if (lower == "disk") return Tier::Disk;
    throw ArgumentError(cat("unknown tier '", name, "' (expected gpu, ram or disk)"));
}

}  // namespace strata
